#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`pytstates --pid` on running scenario programs: the same facts as from their cores, the process
carries on afterwards (answers on stdin, exits 0), and pytstates never leaves it stopped."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import findings_cases  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

PYTHON = "/usr/bin/python3"


def stopped_threads(pid):
    """LWPs of pid that are in a ptrace or job-control stop."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state in ("t", "T"):
            out.append(int(tid))
    return out


def pid_check(args, pid, extra):
    status, out, err = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(pid)] + extra)
    expect(status in (0, 1), "pytstates --pid exited %d: %s" % (status, err))
    return status, out


def findings_case(args, case):
    with scenario.running(findings_cases.argv(args.scenarios, case)) as (proc, facts):
        def internals(extra):
            status, out, err = scenario.run_pytstates(args.pytstates, ["internals", "--pid", str(proc.pid)] + extra)
            expect(status in (0, 1), "pytstates internals --pid exited %d: %s" % (status, err))
            return status, out
        findings_cases.with_internals(internals)
        findings_cases.check_case(case, facts, lambda extra: pid_check(args, proc.pid, extra), "live")
        expect(not stopped_threads(proc.pid), "no thread left stopped")
        expect(scenario.still_answers(proc), "the process answers and exits normally after pytstates")


def no_stop(args):
    """--no-stop: nothing is stopped; threads come from glibc's lists; the report says so."""
    with scenario.running(findings_cases.argv(args.scenarios, "embed")) as (proc, facts):
        def check(extra):
            status, out, err = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(proc.pid), "--no-stop"] + extra)
            expect(status in (0, 1), "pytstates --no-stop exited %d: %s" % (status, err))
            return status, out
        findings_cases.check_embed(facts, check, "live")
        status, r = check(["--json"])
        expect("stopped_ms" not in r["target"], "no stop time when nothing was stopped", r)
        expect("read_after_resume" not in r["target"], "nothing said read after a resume when nothing was stopped", r)
        expect(any("without stopping" in w for w in r.get("warnings", [])), "the report says the snapshot may be inconsistent", r)
        expect(not stopped_threads(proc.pid), "no thread stopped")
        expect(scenario.still_answers(proc), "the process answers and exits normally")


def many_threads(args):
    with scenario.running([PYTHON, os.path.join(args.live_scenarios, "many_threads.py"), "220"]) as (proc, facts):
        times = []
        for _ in range(5):
            status, r = pid_check(args, proc.pid, ["--json"])
            times.append(r["target"]["stopped_ms"])
            ts = findings_cases.all_tstates(r)
            for t in facts["threads"]:
                got = ts.get(t["tstate"])
                expect(got is not None and got["lwp"] == t["lwp"] and got["thread_id"] == t["pthread"],
                       "tstate %s of LWP %d" % (t["tstate"], t["lwp"]), r)
            expect(len(r["threads"]) >= len(facts["threads"]), "every thread listed", r)
            expect(not [f for f in r["findings"] if f["severity"] == "error"], "no error finding", r)
            # The stop copies every thread's stack: what is worked out from stacks after the
            # process runs again reads none of it from the running process.
            late = r["target"].get("read_after_resume")
            expect(isinstance(late, list), "the report says what was read after the resume", r)
            parts = {p["part"] for p in late or []}
            expect(not parts & {"thread-state attribution", "native stacks"},
                   "the attribution and the native stacks read the stop's copy only, not the running process: %s" % sorted(parts), r)
            expect(all(p["reads"] > 0 and p["bytes"] >= p["reads"] for p in late or []), "each part counts its reads", r)
        stop_line_adds_up(args, proc.pid, len(facts["threads"]))
        expect(scenario.still_answers(proc), "the process answers and exits normally")
        times.sort()
        print("stopped_ms for %d threads over %d runs: median %.2f, min %.2f, max %.2f" % (
            len(facts["threads"]), len(times), times[len(times) // 2], times[0], times[-1]))


def stop_line_adds_up(args, pid, threads):
    """PYTSTATES_STATS' stop line: its moments come in order and the last is the report's stopped_ms."""
    env = dict(scenario.offline_env(), PYTSTATES_STATS="1")
    status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(pid), "--json"], env=env)
    expect(status in (0, 1), "pytstates --pid exited %d: %s" % (status, err))
    line = [l for l in err.splitlines() if l.startswith("pytstates-stats: stop:")]
    m = re.search(r"threads stopped at ([0-9.]+) ms, snapshot of (\d+) pages in \d+ reads at ([0-9.]+) ms "
                  r"\(copied beside the analysis, which first needed it at ([0-9.]+) ms\);.*"
                  r"analysis while stopped done at ([0-9.]+) ms, all threads detached at ([0-9.]+) ms", line[0] if line else "")
    expect(m is not None, "one stop line in the stats: %r" % err)
    stopped, pages, snapshot, needed, analysis, detached = float(m[1]), int(m[2]), float(m[3]), float(m[4]), float(m[5]), float(m[6])
    expect(0 < stopped <= snapshot <= analysis <= detached, "stopped, copied, analysed, detached in that order: %s" % line[0])
    expect(stopped <= needed <= analysis, "the analysis needed the copy while stopped: %s" % line[0])
    expect(pages >= threads, "the snapshot holds at least one page of each thread's own stack: %s" % line[0])
    expect(abs(detached - r["target"]["stopped_ms"]) < 0.06, "the report's stopped_ms is when the last thread was detached: %s, %s" % (
        line[0], r["target"]["stopped_ms"]))


def churn(args):
    with scenario.running([PYTHON, os.path.join(args.live_scenarios, "churn.py")]) as (proc, facts):
        for i in range(30):
            status, r = pid_check(args, proc.pid, ["--json"])
            lwps = {t["lwp"] for t in r["threads"]}
            expect(facts["main_lwp"] in lwps, "the main thread is listed", r)
            for ts in findings_cases.all_tstates(r).values():
                expect(ts["lwp"] is None or ts["lwp"] in lwps, "a tstate's LWP is one of the threads", r)
            expect(not findings_cases.findings(r, "stale-tstate"), "no stale pointer while threads come and go", r)
        expect(not stopped_threads(proc.pid), "no thread left stopped")
        expect(scenario.still_answers(proc), "the process answers and exits normally")


def killed_mid_snapshot(args, sig):
    with scenario.running([PYTHON, os.path.join(args.live_scenarios, "many_threads.py"), "220"]) as (proc, facts):
        env = dict(os.environ, PYTSTATES_TEST_HOLD_MS="5000")
        tool = subprocess.Popen([args.pytstates, "check", "--pid", str(proc.pid)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(stopped_threads(proc.pid)) < len(facts["threads"]):
            time.sleep(0.02)
        expect(len(stopped_threads(proc.pid)) >= len(facts["threads"]), "pytstates stopped every thread")
        tool.send_signal(sig)
        _, err = tool.communicate(timeout=30)
        if sig == signal.SIGTERM:
            expect(tool.returncode == 2 and b"detached" in err, "SIGTERM: exit 2 and one line: %r" % err)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and stopped_threads(proc.pid):
            time.sleep(0.02)
        expect(not stopped_threads(proc.pid), "the target runs again after pytstates died by %s" % sig.name)
        expect(scenario.still_answers(proc), "the process answers and exits normally")


def errors(args):
    status, _, err = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", "999999999"])
    expect(status == 2 and "no such process" in err and err.count("\n") == 1, "no such process: %r" % err)
    # another user's process: pytstates run as nobody against this (root's) process
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp(prefix="pytstates-user-")
    try:
        os.chmod(tmp, 0o755)
        # The binary with its library, laid out as installed (bin/, lib/pytstates/); the build
        # tree's run path names the build directory, which another user may not enter.
        tool = os.path.join(tmp, "bin", "pytstates")
        os.makedirs(os.path.dirname(tool))
        shutil.copy2(args.pytstates, tool)
        os.chmod(tool, 0o755)
        here = os.path.dirname(os.path.realpath(args.pytstates))  # the build tree (lib/ beside it) or an install (bin/)
        library = next(d for d in (os.path.join(here, "lib", "pytstates"), os.path.join(here, "..", "lib", "pytstates"))
                       if os.path.isdir(d))
        shutil.copytree(library, os.path.join(tmp, "lib", "pytstates"), symlinks=True)
        for where, dirs, files in os.walk(tmp):
            for name in dirs + files:
                os.chmod(os.path.join(where, name), 0o755)
        out = subprocess.run(["runuser", "-u", "nobody", "--", "env", "LD_LIBRARY_PATH=" + os.path.join(tmp, "lib", "pytstates"),
                              tool, "tstates", "--pid", str(os.getpid())],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        err = out.stderr.decode()
        expect(out.returncode == 2 and "permission denied" in err and err.count("\n") == 1 and not out.stdout,
               "another user's process: %r" % err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    proc, facts = scenario.start([PYTHON, os.path.join(args.live_scenarios, "many_threads.py"), "2"])
    gdb = None
    try:
        gdb = subprocess.Popen(["gdb", "-q", "-nx", "-batch", "-p", str(proc.pid), "-ex", "shell sleep 20"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open("/proc/%d/status" % proc.pid) as f:
                if "TracerPid:\t0" not in f.read():
                    break
            time.sleep(0.05)
        status, out, err = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", str(proc.pid)])
        expect(status == 2 and "already traced" in err and "gdb" in err and out == "" and err.count("\n") == 1,
               "another tracer: %r" % err)
    finally:
        if gdb:
            gdb.kill()
            gdb.wait()
        proc.kill()
        proc.wait()


def ask(proc, command, timeout=10):
    """Sends a line to the scenario and returns its one-line answer."""
    import select
    proc.stdin.write(command.encode() + b"\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    expect(ready, "the scenario answers %r" % command)
    return proc.stdout.readline().decode().strip()


def signals(args):
    """Real-time signals sent to a service while pytstates attaches to it again and again (and
    once while pytstates is killed mid-snapshot) all reach it: none is swallowed by the stop."""
    import threading

    def session(attaches, interrupt=False):
        with scenario.running([os.path.join(args.scenarios, "scenario_signals_host")]) as (proc, facts):
            sent = 0
            done = threading.Event()

            def sender():
                nonlocal sent
                while not done.is_set():
                    os.kill(proc.pid, facts["signal"])
                    sent += 1
                    time.sleep(0.0003)
            thread = threading.Thread(target=sender)
            thread.start()
            try:
                for _ in range(attaches):
                    pid_check(args, proc.pid, ["--json"])
                if interrupt:
                    env = dict(os.environ, PYTSTATES_TEST_HOLD_MS="400")
                    tool = subprocess.Popen([args.pytstates, "check", "--pid", str(proc.pid)], env=env,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    deadline = time.monotonic() + 10
                    while time.monotonic() < deadline and not stopped_threads(proc.pid):
                        time.sleep(0.005)
                    time.sleep(0.05)
                    tool.send_signal(signal.SIGTERM)
                    tool.communicate(timeout=30)
                if not attaches and not interrupt:
                    time.sleep(2)
            finally:
                done.set()
                thread.join()
            received, deadline = -1, time.monotonic() + 10
            while time.monotonic() < deadline:  # the last signals may still be on their way
                received = int(ask(proc, "count").split()[1])
                if received >= sent:
                    break
                time.sleep(0.1)
            expect(not stopped_threads(proc.pid), "no thread left stopped")
            expect(scenario.still_answers(proc), "the service answers and exits normally")
            return sent, received

    for attaches, interrupt, what in ((0, False, "without pytstates"), (30, False, "30 attaches of pytstates check --pid"),
                                      (0, True, "pytstates killed by SIGTERM while the target is stopped")):
        sent, received = session(attaches, interrupt)
        print("real-time signals %s: sent %d, received %d" % (what, sent, received))
        expect(received == sent, "%s: %d of %d signals received" % (what, received, sent))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--live-scenarios", required=True)
    p.add_argument("case")
    args = p.parse_args()
    if args.case in ("seed-svr2", "seed-svr1", "orphan", "shared", "shared-gil", "dlmopen", "torch", "two-abis", "subinterp", "embed", "greenlets") \
            or args.case.startswith("dlopen-tls-"):
        findings_case(args, args.case)
    elif args.case == "no-stop":
        no_stop(args)
    elif args.case == "many-threads":
        many_threads(args)
    elif args.case == "churn":
        churn(args)
    elif args.case == "sigkill":
        killed_mid_snapshot(args, signal.SIGKILL)
    elif args.case == "sigterm":
        killed_mid_snapshot(args, signal.SIGTERM)
    elif args.case == "errors":
        errors(args)
    elif args.case == "signals":
        signals(args)
    else:
        raise SystemExit("unknown case " + args.case)
    print("PASS live " + args.case)


if __name__ == "__main__":
    main()
