#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`pytstates check --pid` while the target dies, exits, execs, forks or takes signals during the
attach (tests/scenarios/live/chaos.py): pytstates always returns within a few seconds, with its
report or one line on stderr (the process exited during the attach); the target is reaped by its
parent (this script) or runs on; no signal sent to it is lost; no child it forks is left traced.

  SIGKILL  50 five-thread targets killed at a random moment of the attach: half at a random time
           within pytstates' usual run, half within 0.5 ms of its first PTRACE_SEIZE
  exit     10 targets that exit by themselves while pytstates reads them
  exec     10 targets one of whose threads (not the main one) execs while pytstates reads them
  vfork    2 targets one of whose threads waits in the kernel for its vfork child, where no
           interrupt stops it: pytstates leaves it out after 3 s
  signals  a target counting the SIGUSR1 it is sent, one at a time, while pytstates attaches 30 times
  fork     a target forking in a loop while pytstates attaches 20 times

About a third to a half of each part's attaches have pytstates stop the threads itself
(PYTSTATES_TEST_NO_TRACER, as where its tracer process may not attach), the others its tracer
process.
"""
import argparse
import atexit
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

PYTHON = "/usr/bin/python3"
RETURN_TIMEOUT = 10  # s after the target's end (or the attach's start) for pytstates to return
REAP_TIMEOUT = 10    # s for this script, the target's parent, to reap a target that died
# The lines for a target that ended: before pytstates saw it (no such process, or a zombie), or
# while it read it.
ENDED = re.compile(r"^pytstates: (the process exited during the attach|the process ran another program \(execve\) during "
                   r"the attach|process \d+ has exited \(its parent has not reaped it yet\)|no such process: \d+$)")


class Counts:
    def __init__(self):
        self.attaches = 0
        self.in_process = 0  # of those, the stops pytstates made itself
        self.hangs = 0
        self.reports = 0
        self.ended_lines = {}
        self.reaped = 0
        self.slowest = 0.0  # s from the target's end (or the attach's start) to pytstates' return

    def ended(self, line):
        key = re.sub(r"\d+", "N", line)
        self.ended_lines[key] = self.ended_lines.get(key, 0) + 1


class Chaos:
    def __init__(self, args):
        self.args = args
        self.script = os.path.join(os.path.abspath(args.live_scenarios), "chaos.py")
        self.workdir = tempfile.mkdtemp(prefix="pytstates-chaos-")
        atexit.register(shutil.rmtree, self.workdir, True)
        self.counts = Counts()
        self.failures = []
        # Layouts cached (in a directory of the test's own): the DWARF is read once, not in each of
        # ~120 runs, which the test does not need to prove again.
        self.env = scenario.offline_env()
        self.env.pop("PYTSTATES_NO_CACHE", None)
        self.env["XDG_CACHE_HOME"] = os.path.join(self.workdir, "cache")

    def start(self, *argv):
        return scenario.start([PYTHON, self.script] + [str(a) for a in argv], workdir=self.workdir)

    def attach(self, pid, in_process=False):
        """pytstates check --pid, started; in_process: the stop made by pytstates itself (as where
        its tracer process may not attach) rather than by its tracer process."""
        self.counts.attaches += 1
        self.counts.in_process += in_process
        env = dict(self.env, PYTSTATES_TEST_NO_TRACER="1") if in_process else self.env
        return subprocess.Popen([self.args.pytstates, "check", "--pid", str(pid)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)

    def returned(self, tool, since, what, pid=0):
        """pytstates' (status, stdout, stderr), which it must give within RETURN_TIMEOUT s of `since`."""
        try:
            out, err = tool.communicate(timeout=max(0.1, since + RETURN_TIMEOUT - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.counts.hangs += 1
            where = describe_processes([tool.pid] + children_of(tool.pid) + ([pid] if pid else []))
            tool.kill()
            tool.communicate()
            raise AssertionError("%s: pytstates did not return within %d s; where things were:\n%s" % (
                what, RETURN_TIMEOUT, where))
        self.counts.slowest = max(self.counts.slowest, time.monotonic() - since)
        return tool.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    def judge(self, status, out, err, what):
        """A report (status 0 or 1, nothing on stderr but warnings), or one line saying the target ended."""
        if status in (0, 1):
            expect(out.strip(), "%s: a report on stdout (status %d); stderr: %r" % (what, status, err))
            self.counts.reports += 1
            return
        expect(status == 2 and err.count("\n") == 1 and ENDED.match(err) and not out,
               "%s: pytstates exited %d; one line saying the target ended expected, got %r" % (what, status, err))
        self.counts.ended(err.strip())

    def reap(self, proc, status, what):
        """This script, the target's parent, reaps it: the attach holds nothing back."""
        try:
            proc.wait(timeout=REAP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s: the target's parent could not reap it within %d s" % (what, REAP_TIMEOUT)) from None
        expect(proc.returncode == status, "%s: the target ended with %d, expected %d" % (what, proc.returncode, status))
        self.counts.reaped += 1

    def calibrate(self):
        """How long pytstates takes to read a five-thread target here (median of 3, in s)."""
        proc, _ = self.start("threads")
        times = []
        try:
            for _ in range(3):
                started = time.monotonic()
                status, out, err = self.returned(self.attach(proc.pid), started, "calibration")
                expect(status in (0, 1), "calibration: pytstates exited %d: %s" % (status, err))
                times.append(time.monotonic() - started)
            expect(scenario.still_answers(proc), "calibration: the target answers and exits 0")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        times.sort()
        return times[1]

    def sigkill(self, runs, run_time):
        after_seize = 0
        for i in range(runs):
            what = "SIGKILL run %d" % i
            proc, _ = self.start("threads")
            tool = None
            try:
                tool = self.attach(proc.pid, in_process=i % 4 >= 2)
                if i % 2:
                    seized = wait_for_tracer(proc.pid, tool)
                    after_seize += seized
                    spin(random.uniform(0, 0.0005))
                else:
                    time.sleep(random.uniform(0, run_time))
                os.kill(proc.pid, signal.SIGKILL)
                killed = time.monotonic()
                # Reaped first, while pytstates may still run: a supervisor sees its service die.
                try:
                    self.reap(proc, -signal.SIGKILL, what)
                    unreaped = None
                except AssertionError as e:
                    unreaped = e
                self.judge(*self.returned(tool, killed, what, proc.pid), what)
                if unreaped:
                    raise unreaped
            except AssertionError as e:  # go on: the summary counts every run that failed
                self.failures.append(str(e))
                print(e, flush=True)
            finally:
                end(tool, proc)
        return after_seize

    def exits(self, runs, run_time):
        for i in range(runs):
            what = "exit run %d" % i
            lifetime = random.uniform(0, 1.5 * run_time)
            proc, _ = self.start("exit", int(lifetime * 1000))
            started = time.monotonic()
            tool = self.attach(proc.pid, in_process=i % 2 == 1)
            try:
                self.reap(proc, 0, what)
                self.judge(*self.returned(tool, max(started + lifetime, time.monotonic()), what), what)
            finally:
                end(tool, proc)

    def execs(self, runs, run_time):
        for i in range(runs):
            what = "exec run %d" % i
            proc, facts = self.start("exec", int(random.uniform(0, 1.5 * run_time) * 1000))
            tool = None
            try:
                started = time.monotonic()
                tool = self.attach(proc.pid, in_process=i % 2 == 1)
                again = scenario.read_facts(proc, time.monotonic() + 30, AssertionError, "the exec'd target")
                expect(again["pid"] == facts["pid"] and again["mode"] == "threads", "%s: the same process runs the new program" % what)
                self.judge(*self.returned(tool, started, what, proc.pid), what)
                expect(not stopped_threads(proc.pid), "%s: no thread left stopped" % what)
                expect(scenario.still_answers(proc), "%s: the exec'd target answers and exits 0" % what)
                self.counts.reaped += 1
            finally:
                end(tool, proc)

    def vfork(self, in_process):
        """A thread that no interrupt stops (waiting for its vfork child, which waits for a FIFO's
        writer): pytstates gives up on it after 3 s, says so, and reads the rest."""
        fifo = os.path.join(self.workdir, "vfork-fifo-%d" % in_process)
        os.mkfifo(fifo)
        proc, _ = self.start("vfork", fifo)
        tool = None
        try:
            deadline = time.monotonic() + 10
            while not [t for t, state in thread_states(proc.pid) if state == "D"] and time.monotonic() < deadline:
                time.sleep(0.01)
            waiting = [t for t, state in thread_states(proc.pid) if state == "D"]
            expect(waiting, "the thread waits for its vfork child: %s" % thread_states(proc.pid))
            started = time.monotonic()
            tool = self.attach(proc.pid, in_process)
            status, out, err = self.returned(tool, started, "vfork", proc.pid)
            took = time.monotonic() - started
            expect(status in (0, 1), "vfork: pytstates exited %d: %s" % (status, err))
            self.counts.reports += 1
            expect("thread %d did not stop within 3 s" % waiting[0] in out, "vfork: the report says which thread was left out: %s" % out[-3000:])
            expect(not stopped_threads(proc.pid), "vfork: no thread left stopped")
            release(fifo)
            expect(scenario.still_answers(proc), "vfork: the target answers and exits 0")
            self.counts.reaped += 1
            return took
        finally:
            if tool and tool.poll() is None:
                end(tool, None)
            release(fifo)  # else the child, outliving the target, would wait for ever
            if proc.poll() is None:
                time.sleep(0.2)  # for the target to reap it
            end(None, proc)

    def signals(self, attaches):
        proc, _ = self.start("signals")
        sent, received, late = 0, [0], []
        other = []  # what else the target wrote (its stderr is its stdout): a traceback, when it fails
        done = threading.Event()

        def sender():
            # One at a time: a second SIGUSR1 sent before the first is handled would merge with it
            # in the kernel (or in Python's handler flag), which would be no loss of pytstates'.
            nonlocal sent
            pending = b""
            while not done.is_set():
                os.kill(proc.pid, signal.SIGUSR1)
                sent += 1
                deadline = time.monotonic() + 5
                while received[0] < sent and time.monotonic() < deadline:
                    ready, _, _ = select.select([proc.stdout], [], [], 0.1)
                    if ready:
                        pending += os.read(proc.stdout.fileno(), 4096)
                        *lines, pending = pending.split(b"\n")
                        for line in lines:
                            if line.startswith(b"sig "):
                                received[0] = int(line.split()[1])
                            else:
                                other.append(line)
                if received[0] < sent:
                    late.append(sent)
                    return
        thread = threading.Thread(target=sender)
        thread.start()
        try:
            for i in range(attaches):
                started = time.monotonic()
                status, out, err = self.returned(self.attach(proc.pid, in_process=i % 3 == 2), started, "signals attach %d" % i, proc.pid)
                if status not in (0, 1):
                    done.set()
                    thread.join()  # it has read what the target wrote before it ended
                    expect(False, "signals attach %d: pytstates exited %d: %s; the target now (exit status: %s; "
                           "its other output: %r):\n%s" % (i, status, err, proc.poll(), b"\n".join(other), describe_processes([proc.pid])))
                self.counts.reports += 1
        finally:
            done.set()
            thread.join()
        expect(not late, "signal %s was not received within 5 s (%d sent, %d received)" % (late, sent, received[0]))
        proc.stdin.write(b"count\n")
        proc.stdin.flush()
        line = proc.stdout.readline().decode().split()
        expect(line[:1] == ["count"], "the target tells its count: %r" % line)
        expect(int(line[1]) == sent, "SIGUSR1 received %s, sent %d" % (line[1], sent))
        expect(not stopped_threads(proc.pid), "signals: no thread left stopped")
        expect(scenario.still_answers(proc), "signals: the target answers and exits 0")
        self.counts.reaped += 1
        return sent, int(line[1])

    def forks(self, attaches):
        proc, _ = self.start("fork")
        try:
            counts = [ask_forks(proc)]
            for i in range(attaches):
                started = time.monotonic()
                status, out, err = self.returned(self.attach(proc.pid, in_process=i % 3 == 2), started, "fork attach %d" % i, proc.pid)
                expect(status in (0, 1), "fork attach %d: pytstates exited %d: %s" % (i, status, err))
                self.counts.reports += 1
                expect(not traced_children(proc.pid), "fork attach %d: no child of the target left traced or stopped: %s" % (
                    i, traced_children(proc.pid)))
                counts.append(ask_forks(proc))
            # It forks on (a loaded machine may starve it a while: up to 10 s).
            last, deadline = counts[-1], time.monotonic() + 10
            while counts[-1] <= last and time.monotonic() < deadline:
                time.sleep(0.1)
                counts.append(ask_forks(proc))
            expect(counts == sorted(counts) and counts[-1] > last, "the target forks on after the attaches: %s; where things are:\n%s" % (
                counts, describe_processes([proc.pid] + children_of(proc.pid))))
            expect(not stopped_threads(proc.pid), "fork: no thread left stopped")
            expect(scenario.still_answers(proc), "fork: the target answers and exits 0")
            self.counts.reaped += 1
            return counts[-1]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def end(tool, proc):
    """After a run, failed or not: neither pytstates nor the target is left behind."""
    if tool and tool.poll() is None:
        tool.kill()
        tool.communicate()
    if proc and proc.poll() is None:
        proc.kill()
        proc.wait()


def release(fifo):
    """Opens the FIFO for writing if a reader waits for it (then it goes on), once."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # ENXIO: no reader (any more)
        pass


def children_of(pid):
    out = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % entry) as f:
                if entry.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def describe_processes(pids):
    """Each thread's state and kernel wait channel, for a failure that says where things stood."""
    lines = []
    for pid in pids:
        try:
            for tid in sorted(os.listdir("/proc/%d/task" % pid), key=int):
                base = "/proc/%d/task/%s/" % (pid, tid)
                with open(base + "stat") as f:
                    stat = f.read()
                with open(base + "wchan") as f:
                    wchan = f.read()
                with open(base + "status") as f:
                    tracer = [l.split()[1] for l in f if l.startswith("TracerPid:")]
                lines.append("  %d/%s %s state %s wchan %s tracer %s" % (
                    pid, tid, stat[stat.index("("):stat.rindex(")") + 1], stat.rsplit(")", 1)[1].split()[0], wchan or "-",
                    tracer[0] if tracer else "?"))
        except (OSError, ValueError):
            lines.append("  %d: gone" % pid)
    return "\n".join(lines)


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def wait_for_tracer(pid, tool):
    """Spins until pytstates has seized a thread of pid (TracerPid set; True) or has ended (False)."""
    fd = os.open("/proc/%d/status" % pid, os.O_RDONLY)
    try:
        deadline = time.monotonic() + RETURN_TIMEOUT
        while time.monotonic() < deadline:
            status = os.pread(fd, 4096, 0)
            at = status.find(b"TracerPid:\t")
            if at >= 0 and status[at + 11:at + 12] != b"0":
                return True
            if tool.poll() is not None:
                return False
        return False
    finally:
        os.close(fd)


def thread_states(pid):
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                out.append((int(tid), f.read().rsplit(")", 1)[1].split()[0]))
        except OSError:
            continue
    return out


def stopped_threads(pid):
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("t", "T"):
                    out.append(int(tid))
        except OSError:
            continue
    return out


def traced_children(pid):
    """Children of pid that are traced or stopped (a fork the attach followed, or left stopped)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) != pid:
                continue
            with open("/proc/%s/status" % entry) as f:
                traced = "TracerPid:\t0\n" not in f.read()
            if traced or fields[0] in ("t", "T"):
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def ask_forks(proc):
    proc.stdin.write(b"forks\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], 10)
    expect(ready, "the fork target answers")
    line = proc.stdout.readline().decode().split()
    expect(line[:1] == ["forks"], "the fork target tells its count: %r" % line)
    return int(line[1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--live-scenarios", required=True)
    p.add_argument("--kills", type=int, default=50)
    p.add_argument("--parts", nargs="+", default=["sigkill", "exit", "exec", "vfork", "signals", "fork"])
    args = p.parse_args()
    started = time.monotonic()
    seed = int(os.environ.get("PYTSTATES_CHAOS_SEED", str(random.randrange(1 << 30))))
    random.seed(seed)
    print("seed %d (PYTSTATES_CHAOS_SEED repeats a run's choices)" % seed, flush=True)
    chaos = Chaos(args)
    mark = [started]

    def lap():  # the part's time, before its line
        now = time.monotonic()
        took, mark[0] = now - mark[0], now
        return "[%4.1f s] " % took
    c = chaos.counts
    try:
        run_time = chaos.calibrate()
        print("pytstates reads a five-thread target in %.0f ms here" % (run_time * 1000), flush=True)
        if "sigkill" in args.parts:
            after_seize = chaos.sigkill(args.kills, run_time)
            expect(not chaos.failures, "%d of %d SIGKILL runs failed" % (len(chaos.failures), args.kills))
            # The kills meant for the stop itself got there (else the test missed what it is for).
            expect(after_seize >= args.kills // 4, "only %d kills came after pytstates' first seize" % after_seize)
            print(lap() + "SIGKILL: %d targets killed (%d within 0.5 ms of pytstates' first seize), all reaped by their parent" % (
                args.kills, after_seize), flush=True)
        if "exit" in args.parts:
            chaos.exits(10, run_time)
            print(lap() + "exit: 10 targets that exited by themselves, all reaped by their parent", flush=True)
        if "exec" in args.parts:
            chaos.execs(10, run_time)
            print(lap() + "exec: 10 targets that exec'd, all running on", flush=True)
        if "vfork" in args.parts:
            took = [chaos.vfork(in_process) for in_process in (False, True)]
            print(lap() + "vfork: a thread no interrupt stops was left out after %.1f s (%.1f s when pytstates stopped the "
                  "threads itself)" % tuple(took), flush=True)
        if "signals" in args.parts:
            sent, received = chaos.signals(30)
            print(lap() + "signals: SIGUSR1 sent %d, received %d, over 30 attaches" % (sent, received), flush=True)
        if "fork" in args.parts:
            forks = chaos.forks(20)
            print(lap() + "fork: %d forks over 20 attaches, no child left traced or stopped" % forks, flush=True)
    finally:
        print("attaches %d (%d stopped by pytstates itself, the others by its tracer process), hangs %d, reports %d, "
              "targets reaped or running on %d; slowest return %.2f s; %.1f s in all" % (
                  c.attaches, c.in_process, c.hangs, c.reports, c.reaped, c.slowest, time.monotonic() - started))
        for line, n in sorted(c.ended_lines.items(), key=lambda kv: -kv[1]):
            print("  %3d x %s" % (n, line))
    print("PASS live chaos")


if __name__ == "__main__":
    main()
