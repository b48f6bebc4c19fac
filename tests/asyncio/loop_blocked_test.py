# SPDX-License-Identifier: Apache-2.0
"""Event loops blocked and idle (issue 41): tests/asyncio/loop_blocked.py live (--pid) and from its
gcore core, on Debian 12's python3.11, pyenv's CPythons and Debian unstable's 3.14.

  ticker   a ticker task on asyncio.sleep(0.01) and a task in time.sleep(3600) on the loop's thread:
           one event-loop-blocked (warning, a hang: exit 1) naming the loop's LWP, the task, the call
           (clock_nanosleep; select before 3.11), the ready queue and the timers: live, the timers
           due on CLOCK_MONOTONIC (the ticker's, not the sleeper's); a core, "scheduled", no clock.
  threads  three threads: each loop's LWP, every thread's blocked_on (an idle loop's `asyncio-loop`
           with its loop, the blocked loop's system call, the main thread's threading.Event.wait
           `event` with its Event); the finding names the blocked loop only.

Truth: what the program printed of itself (id() of its loops, tasks and Event, get_native_id() of
each thread, len(loop._ready), every TimerHandle's _when and the loop's time() before it blocked),
its own source lines, and gdb's backtrace of each thread (the call each blocks in); on 3.14 live
also `python3.14 -m asyncio ps PID` (CPython's own reading of the process's tasks).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import scenario  # noqa: E402
import pyenv  # noqa: E402
from native_check import base_name  # noqa: E402

PROGRAM = os.path.join(HERE, "loop_blocked.py")
PROBLEMS = []


def expect(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        PROBLEMS.append(what)


def h(n):
    return "0x%x" % n


def line_of(text):
    """The line number where `text` (which may span lines) starts, once in the program."""
    with open(PROGRAM) as f:
        source = f.read()
    at = source.find(text)
    assert at >= 0 and source.find(text, at + 1) < 0, text
    return source.count("\n", 0, at) + 1 + len(text) - len(text.lstrip("\n"))


SYSCALLS = {"clock_nanosleep": 230, "epoll_wait": 232, "epoll_pwait": 281, "select": 23}  # x86_64


def gdb_threads(argv_tail):
    """{lwp: {"frames": [innermost function names], "syscall": orig_rax}} from gdb's `thread apply all
    bt` and `thread apply all p $orig_rax` (argv_tail: the program and core, or -p PID)."""
    cmd = ["gdb", "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-ex", "set width 0",
           "-ex", "set print frame-arguments none", "-ex", "thread apply all bt 16", "-ex", "thread apply all p $orig_rax"] + argv_tail
    out = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=200,
                         env=scenario.offline_env()).stdout.decode(errors="replace")
    threads, lwp = {}, None
    for line in out.splitlines():
        m = re.match(r"^Thread \d+ \(.*?(?:LWP|process) (\d+)", line)  # a lone thread without libthread_db: "process N"
        if m:
            lwp = int(m.group(1))
            threads.setdefault(lwp, {"frames": [], "syscall": None})
            continue
        m = re.match(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+)", line)
        if m and lwp is not None:
            threads[lwp]["frames"].append(base_name(m.group(1)))
        m = re.match(r"^\$\d+ = (-?\d+)$", line)
        if m and lwp is not None:
            threads[lwp]["syscall"] = int(m.group(1))
    return threads


def gdb_blocked_in(threads, lwp, calls):
    """Whether gdb says `lwp` is in one of `calls`: a frame of its backtrace names it (a glibc alias
    counts: __GI___clock_nanosleep), or, where gdb cannot unwind the stack, its orig_rax is the call's."""
    t = threads.get(lwp, {"frames": [], "syscall": None})
    names = [n.lstrip("_").replace("GI_", "").lstrip("_").replace("libc_", "") for n in t["frames"]]
    by_frame = any(any(n == c or n.startswith(c + "_") for c in calls) for n in names)
    return by_frame or t["syscall"] in [SYSCALLS[c] for c in calls if c in SYSCALLS]


def row_of(report, lwp):
    return next((t for t in report["threads"] if t["lwp"] == lwp), None)


def loops_by_name(facts, report):
    mine = {l["loop"]: l for l in report["event_loops"]}
    return {l["name"]: (l, mine.get(h(l["loop"]))) for l in facts["loops"]}


def check_report(facts, report, status, live, before, after, stacks):
    """before/after: this process's time.monotonic() just before and after pytstates read the target
    (live): a timer due before `before` must be due, one due after `after` must not."""
    expect(status == 1, "exit status 1 (a hang: the loop is blocked): %d" % status)
    loops = loops_by_name(facts, report)
    expect(len(report["event_loops"]) == len(facts["loops"]), "%d event loops (the program ran %d)" % (
        len(report["event_loops"]), len(facts["loops"])))
    for name, (fact, mine) in loops.items():
        expect(mine is not None and mine["lwp"] == fact["lwp"], "loop %s %s runs on LWP %d: %s" % (
            name, h(fact["loop"]), fact["lwp"], mine and mine["lwp"]))
    for thread in facts["threads"]:
        row = row_of(report, thread["lwp"])
        b = (row or {}).get("blocked_on") or {}
        expect(b.get("kind") == thread["blocks_in"], "LWP %d (%s) blocked_on.kind %s (the program: %s)" % (
            thread["lwp"], thread["name"], b.get("kind"), thread["blocks_in"]))
        if thread["blocks_in"] == "syscall":
            expect(b.get("call") == thread["call"], "LWP %d is blocked in %s: %s" % (thread["lwp"], thread["call"], b.get("call")))
            if stacks is not None:
                expect(gdb_blocked_in(stacks, thread["lwp"], [thread["call"]]), "gdb: LWP %d is in %s: %s" % (
                    thread["lwp"], thread["call"], stacks.get(thread["lwp"])))
        elif thread["blocks_in"] == "asyncio-loop":
            loop = next(l for l in facts["loops"] if l["lwp"] == thread["lwp"])
            expect(b.get("python_object") == h(loop["loop"]), "LWP %d idles in loop %s's selector: %s" % (
                thread["lwp"], h(loop["loop"]), b.get("python_object")))
            expect(b.get("call") in ("epoll_wait", "epoll_pwait", "epoll_pwait2"), "... in epoll_wait: %s" % b.get("call"))
            if stacks is not None:
                expect(gdb_blocked_in(stacks, thread["lwp"], ["epoll_wait", "epoll_pwait"]), "gdb: LWP %d is in epoll_wait: %s" % (
                    thread["lwp"], stacks.get(thread["lwp"])))
        elif thread["blocks_in"] == "event":
            expect(b.get("python_object") == h(facts["main_event"]), "LWP %d waits on the program's Event %s: %s" % (
                thread["lwp"], h(facts["main_event"]), b.get("python_object")))
    blocked = [f for f in report["findings"] if f["code"] == "event-loop-blocked"]
    others = [f for f in report["findings"] if f["code"] != "event-loop-blocked"]
    expect(not others, "no other finding: %s" % [f["code"] for f in others])
    want = [l for l in facts["loops"] if l["blocked"]]
    expect(len(blocked) == len(want), "%d event-loop-blocked finding(s): %d" % (len(want), len(blocked)))
    for fact in want:
        f = next((f for f in blocked if f.get("loop") == h(fact["loop"])), None)
        expect(f is not None, "event-loop-blocked names loop %s" % h(fact["loop"]))
        if not f:
            continue
        call = next(t["call"] for t in facts["threads"] if t["lwp"] == fact["lwp"])
        blocker = h(fact["blocker"]) if fact["blocker"] else None  # None: a callback blocks it
        expect(f["severity"] == "warning" and f["lwp"] == fact["lwp"] and f["task"] == blocker and f["function"] == call,
               "the finding: warning, LWP %d, task %s, %s: %s" % (fact["lwp"], blocker, call,
                                                                 json.dumps({k: f.get(k) for k in ("severity", "lwp", "task", "function")})))
        expect((f.get("blocked_on") or {}).get("kind") == "syscall", "its blocked_on is the thread's: %s" % f.get("blocked_on"))
        expect(f.get("ready") == fact["ready"], "ready callbacks %s (the program: %d)" % (f.get("ready"), fact["ready"]))
        timers = f.get("timers") or {}
        expect(timers.get("scheduled") == len(fact["timers"]), "timers scheduled %s (the program: %d)" % (
            timers.get("scheduled"), len(fact["timers"])))
        at = ("block (%s:%d)" % (facts["file"], line_of("    time.sleep(3600)\n\n\nasync def ticker_main")) if blocker else
              "inside one of its callbacks (no task runs) at freeze (%s:%d)" % (facts["file"], line_of("    time.sleep(3600)\n\n\nasync def callback_main")))
        expect(at in f["message"], "the message names the task's frame %s: %s" % (at, f["message"]))
        if live:
            low = sum(1 for w in fact["timers"] if w <= before)   # due before pytstates started
            high = sum(1 for w in fact["timers"] if w <= after)   # due by the time it ended
            expect(timers.get("due") is not None and low <= timers["due"] <= high,
                   "timers due %s, between %d and %d by CLOCK_MONOTONIC" % (timers.get("due"), low, high))
            expect(low == high >= 1, "(the program's timers due by then: %d, and no more after: %d)" % (low, high))
            expect("%d due (the earliest" % low in f["message"], "the message says which are due: " + f["message"])
            over = timers.get("most_overdue_s")
            expect(over is not None and before - fact["timers"][0] - 1 <= over <= after - fact["timers"][0] + 1,
                   "the earliest timer is %s s overdue (the program's _when %.3f, our clock %.3f..%.3f)" % (
                       over, fact["timers"][0], before, after))
        else:
            expect(timers.get("due") is None, "a core: no timer said due (no clock): %s" % timers.get("due"))
            expect("a core records no clock" in f["message"], "the message says the core has no clock: " + f["message"])
        loop = loops[fact["name"]][1] or {}
        expect(loop.get("running_task") == blocker, "the loop's running task: %s (the program's: %s)" % (loop.get("running_task"), blocker))


def check_text(text, facts):
    for fact in facts["loops"]:
        if fact["blocked"]:
            by = "a task" if fact.get("blocker") else "a callback"
            expect("HANG  event loop %s is blocked by %s" % (h(fact["loop"]), by) in text, "text: HANG event loop %s, by %s" % (h(fact["loop"]), by))
        else:
            expect("idle in the selector of asyncio event loop %s" % h(fact["loop"]) in text, "text: LWP %d idle in loop %s" % (
                fact["lwp"], h(fact["loop"])))


def asyncio_ps(python_argv, pid, env, report):
    """CPython 3.14's own reading of the live process's tasks (`python3.14 -m asyncio ps PID`: a row
    per task, its thread, id and name), held against the report's."""
    out = subprocess.run(python_argv + ["-m", "asyncio", "ps", str(pid)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=env, timeout=60)
    text = out.stdout.decode(errors="replace")
    expect(out.returncode == 0, "python3.14 -m asyncio ps %d ran: %s" % (pid, text[-500:] if out.returncode else "0"))
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].startswith("0x"):
            rows[parts[1]] = (int(parts[0]), parts[2])
    for loop in report["event_loops"]:
        for t in loop["tasks"]:
            expect(rows.get(t["address"]) == (loop["lwp"], t["name"]), "asyncio ps: task %s %s on LWP %s: %s" % (
                t["name"], t["address"], loop["lwp"], rows.get(t["address"])))
    ours = {t["address"] for l in report["event_loops"] for t in l["tasks"]}
    expect(set(rows) == ours, "asyncio ps lists the report's %d tasks: %s" % (len(ours), sorted(rows)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--pyenv-version")
    p.add_argument("--sid-version", choices=["3.14", "3.15"])
    p.add_argument("--python314-dir", default="")
    p.add_argument("--python315-dir", default="")
    p.add_argument("--python", default="/usr/bin/python3.11", help="Debian 12's, unless --pyenv-version or --sid-version")
    p.add_argument("scenario", choices=["ticker", "threads", "callback"])
    p.add_argument("--gdb-script", help="kind gdb-live: the gdb module (build/plugin/gdb/pytstates.gdb)")
    p.add_argument("kind", choices=["gcore", "live", "gdb-live"])
    args = p.parse_args()
    python, env, sysroot, launcher = args.python, None, [], None
    if args.pyenv_version:
        full, python = pyenv.require(args.pyenv_version)
        print("CPython %s from pyenv: %s" % (full, python))
    elif args.sid_version:
        cache = args.python314_dir if args.sid_version == "3.14" else args.python315_dir
        out = subprocess.run([os.path.join(HERE, "..", "..", "scripts", "debian-python"), args.sid_version, cache],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            print("NOT RUN (not a pass): CPython %s from Debian's unstable suite is not available: %s"
                  % (args.sid_version, out.stderr.decode(errors="replace").strip()))
            sys.exit(77)
        root = out.stdout.decode().strip().splitlines()[-1]
        env = scenario.offline_env()
        env["PYTHONHOME"] = os.path.join(root, "usr")
        python = os.path.join(root, "usr", "bin", "python" + args.sid_version)
        launcher = [os.path.join(root, "lib64", "ld-linux-x86-64.so.2"), "--library-path", os.path.join(root, "lib", "x86_64-linux-gnu"), python]
        sysroot = ["--sysroot", root]
        print("CPython %s from Debian's unstable suite: %s" % (args.sid_version, python))
    elif not os.path.exists(python):
        print("NOT RUN (not a pass): no %s here" % python)
        sys.exit(77)
    argv = (launcher or [python]) + [PROGRAM, args.scenario]
    json_args = ["check", "--tasks", "--json"]
    if args.kind == "gdb-live":
        # gdb attached to the running process: py-tstates-check --tasks --json, the timers due on the
        # process's clock as the CLI's (symbols/debugger/debugger_target: a live process on this machine).
        from debugger_batch import as_json, between, gdb, marked
        with scenario.running(argv, env=env) as (proc, facts):
            time.sleep(0.2)
            before = time.monotonic()
            _, out = gdb(args.gdb_script, ["-p", str(proc.pid)], marked("json", "py-tstates-check --tasks --json"), timeout=180)
            after = time.monotonic()
            report = as_json(between(out, "json"))
            hangs = ("deadlock", "gil-held-while-blocked", "stop-the-world-blocked", "event-loop-blocked")
            status = 1 if any(f["severity"] == "error" or f["code"] in hangs for f in report["findings"]) else 0
            check_report(facts, report, status, True, before, after, None)
            expect(proc.poll() is None, "the program runs on after gdb detached")
    elif args.kind == "live":
        with scenario.running(argv, env=env) as (proc, facts):
            time.sleep(0.2)  # past the ticker's next timer
            before = time.monotonic()
            status, report, err = scenario.run_pytstates(args.pytstates, json_args + ["--pid", str(proc.pid)])
            after = time.monotonic()
            expect(status in (0, 1), "check --tasks --json --pid ran: %d %s" % (status, err.strip()[-500:]))
            stacks = gdb_threads(["-p", str(proc.pid)])
            if status in (0, 1):
                check_report(facts, report, status, True, before, after, stacks)
            status, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--tasks", "--pid", str(proc.pid)])
            print(text)
            check_text(text, facts)
            if args.sid_version == "3.14" and args.scenario == "ticker" and status in (0, 1):
                # (3.14.x's asyncio ps lists no task of a loop on another thread than the main one)
                asyncio_ps(launcher, proc.pid, env, report)
            expect(proc.poll() is None, "the program runs on after the reads")
    else:
        facts, core = scenario.take_core(argv, env=env)
        try:
            status, report, err = scenario.run_pytstates(args.pytstates, json_args + sysroot + ["--core", core, "--exe", python])
            expect(status in (0, 1), "check --tasks --json --core ran: %d %s" % (status, err.strip()[-500:]))
            stacks = gdb_threads([python, core])
            if status in (0, 1):
                check_report(facts, report, status, False, None, None, stacks)
            status, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--tasks"] + sysroot + ["--core", core, "--exe", python])
            print(text)
            check_text(text, facts)
        finally:
            scenario.cleanup(core)
    if PROBLEMS:
        print("%d problem(s):\n  %s" % (len(PROBLEMS), "\n  ".join(PROBLEMS)))
        sys.exit(1)


if __name__ == "__main__":
    main()
