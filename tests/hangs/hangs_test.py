#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Real hangs and aborts: `pytstates check` on cores (gcore, the kernel's) and live processes of
programs that truly deadlock or abort, held against what each program printed about itself
(gettid, lock addresses) and against gdb's own reading of the lock owners (libc6-dbg)."""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import gdb_oracle  # noqa: E402
import pyenv  # noqa: E402
import scenario  # noqa: E402

SETTLE = 1.5  # READY comes just before the last blocking call (ctypes' B sleeps 1 s first)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def python_for(version):
    if version in (None, scenario.PYTHON_VERSION):  # the suite's own Python
        return scenario.PYTHON
    if version.endswith("t"):  # free-threaded, built by scripts/python-freethreaded (its prefix on stdout)
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run([os.path.join(here, "..", "..", "scripts", "python-freethreaded"), version[:-1]],
                             stdout=subprocess.PIPE, text=True)
        expect(out.returncode == 0, "no free-threaded CPython " + version)
        return os.path.join(out.stdout.strip(), "bin", "python" + version)
    return pyenv.require(version)[1]  # pyenv's X.Y, else NOT RUN (exit 77)


def host_for(args):
    """scenario_hang_host embeds the suite's Python; scenario_hang_host_X.Y another (pyenv's, 3.13t)."""
    if args.python in (None, scenario.PYTHON_VERSION):
        return os.path.join(args.scenarios, "scenario_hang_host")
    if not args.python.endswith("t"):  # pyenv's X.Y: NOT RUN (exit 77) where pyenv has it not
        pyenv.require(args.python)
    exe = os.path.join(args.scenarios, "scenario_hang_host_" + args.python)
    expect(os.path.exists(exe), "%s was not built (no CPython %s or no pybind11 2.13 headers at configure time)" % (exe, args.python))
    return exe


def argv_of(args):
    if args.program == "host":
        return [host_for(args), args.case]
    script = "rlock_abba.py" if args.program == "rlock" else "ctypes_hang.py"
    argv = [python_for(args.python), os.path.join(args.scenarios, script)]
    return argv + ([] if args.program == "rlock" else [args.case])


def hex_int(s):
    return int(s, 16)


READ = {}  # core -> gdb_oracle's reading of it, whose run also evaluated owner_exprs()


def owner_exprs(case, facts):
    """The lock owners check_hang asks gdb for (glibc's DWARF from libc6-dbg)."""
    if case == "gil-mutex":
        return ["((pthread_mutex_t*)%#x)->__data.__owner" % hex_int(facts["mutex"])]
    if case == "cycle3":
        return ["((pthread_mutex_t*)%#x)->__data.__owner" % hex_int(facts["m2"])]
    if case == "rwlock":
        return ["((pthread_rwlock_t*)%#x)->__data.__cur_writer" % hex_int(facts["rwlock"])]
    return []


def gdb_owner(exe, core_or_pid, expr):
    """An int gdb prints for expr on the core (or pid), with glibc's DWARF from libc6-dbg: from
    gdb_oracle's run on a core, else a gdb of its own."""
    said = READ.get(core_or_pid)
    if said is not None and isinstance(said["values"].get(expr), int):
        return said["values"][expr]
    target = ["-p", str(core_or_pid)] if isinstance(core_or_pid, int) else [exe, core_or_pid]
    out = subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "print " + expr] + target, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, timeout=300).stdout
    for line in out.splitlines():
        if line.startswith("$1 = "):
            return int(line.split("=", 1)[1].strip())
    raise AssertionError("gdb printed no value for %s:\n%s" % (expr, out))


def threads_by_lwp(report):
    return {t["lwp"]: t for t in report["threads"]}


def findings(report, code):
    return [f for f in report["findings"] if f["code"] == code]


def check_deadlock(report, text, expected):
    """expected: [(lwp, waits_for, object or None, held_by)] in cycle order, from any start."""
    dl = findings(report, "deadlock")
    expect(len(dl) == 1, "one deadlock finding expected, got %s" % [f["message"] for f in report["findings"]])
    cycle = dl[0]["cycle"]
    got = {s["lwp"]: (s["waits_for"], s["object"] and hex_int(s["object"]), s["held_by"]) for s in cycle}
    want = {lwp: (kind, obj, held) for lwp, kind, obj, held in expected}
    expect(got == want, "cycle %s, expected %s" % (got, want))
    expect(dl[0]["severity"] == "error" and dl[0]["lwp"] in want, "deadlock finding: %s" % dl[0])
    by = threads_by_lwp(report)
    for lwp, kind, obj, held in expected:
        b = by[lwp]["blocked_on"]
        expect(b["kind"] == kind and b["held_by"] == held, "LWP %d blocked_on %s" % (lwp, b))
        if obj is not None:
            expect(hex_int(b["object"]) == obj, "LWP %d object %s, expected %#x" % (lwp, b["object"], obj))
    # Where each fact was read: every thread's stack, the owner's field at the lock's address.
    sources = dl[0]["sources"]
    for lwp, kind, obj, held in expected:
        expect(any(s.startswith("native stack of LWP %d (frame #" % lwp) for s in sources), "no stack source for LWP %d: %s" % (lwp, sources))
        field = {"mutex": "pthread_mutex_t.__data.__owner", "rwlock": "pthread_rwlock_t.__data.__cur_writer",
                 "python-lock": "RLock.rlock_owner", "stop-the-world": "PyThreadState.state"}.get(kind)
        if field and obj is not None:
            expect(any(s.startswith("%s at %#x (layout from " % (field, obj)) for s in sources), "no %s source at %#x: %s" % (field, obj, sources))
        if kind == "join":
            expect(any(s.startswith("struct pthread ") and ("of LWP %d (the joined thread)" % held) in s for s in sources),
                   "no join source: %s" % sources)
        if kind == "gil":
            expect(any(gil_holder_source(report, s, held) for s in sources), "no GIL holder source for LWP %d: %s" % (held, sources))
    for s in sources:
        expect("from " + s.split(" (")[0] in text, "the text does not show the source %r" % s)
    # An owner read from the running process (a live target resumed before the waits were read)
    # is said so in its thread's blocked_on, its source line and the finding; never for a core.
    late_parts = [p for p in (report["target"].get("read_after_resume") or []) if p["part"] == "waits" and p["reads"] > 0]
    for lwp, *_ in expected:
        late = by[lwp]["blocked_on"].get("owner_read_after_resume", False)
        expect(not late or late_parts, "LWP %d: owner read late, but no read of the waits after the resume is counted" % lwp)
        expect(not late or report["target"]["kind"] == "live", "LWP %d: owner read late in a %s" % (lwp, report["target"]["kind"]))
        if late:
            expect(any(", read from the running process after the stop ended" in s or "its TID read from the running process" in s
                       for s in sources), "LWP %d: owner read late, no source says so: %s" % (lwp, sources))
            said = dl[0]["message"].split(" was read after the process was resumed")[0].split(". The owner of what LWP ")[-1]
            expect(str(lwp) in said.replace(" wait for", "").replace(" waits for", "").split(", "),
                   "LWP %d: owner read late, the message does not say so: %s" % (lwp, dl[0]["message"]))
    expect("HANG  deadlock: %d threads wait for each other" % len(expected) in text, "no HANG section:\n" + text[:3000])
    expect(text.index("HANG") < text.index("FINDINGS"), "HANG is not at the top")
    for lwp, *_ in expected:
        expect("LWP %d" % lwp in text.split("FINDINGS")[0], "LWP %d not in the HANG section" % lwp)


def gil_holder_source(report, source, lwp):
    """A finding's source naming the GIL's holder run by lwp, read where the version keeps it: up to
    3.11 gilstate.tstate_current (last_holder stays behind a PyThreadState_Swap), from 3.12 the
    GIL's last_holder."""
    minor = int(report["runtimes"][0]["version"].split(".")[1])
    where = " is locked and gilstate.tstate_current names tstate " if minor <= 11 else None
    if where is None:
        return source.startswith("GIL holder (the last_holder of interpreter ") and ("run by LWP %d;" % lwp) in source
    return source.startswith("GIL holder (interpreter ") and where in source and ("run by LWP %d;" % lwp) in source


def check_blocked_holder(report, text, holder, waiters, calls):
    g = findings(report, "gil-held-while-blocked")
    expect(len(g) == 1, "one gil-held-while-blocked expected, got %s" % [f["message"] for f in report["findings"]])
    expect(not findings(report, "deadlock"), "a deadlock where there is none")
    f = g[0]
    expect(f["lwp"] == holder and f["severity"] == "warning", "finding %s" % f)
    expect(f["function"] in calls, "function %r, expected one of %s" % (f["function"], calls))
    expect(set(waiters) <= set(f["waiters"]), "waiters %s, expected %s" % (f["waiters"], waiters))
    b = threads_by_lwp(report)[holder]["blocked_on"]
    expect(b["kind"] == "syscall" and b["call"] in calls, "holder blocked_on %s" % b)
    for w in waiters:
        wb = threads_by_lwp(report)[w]["blocked_on"]
        expect(wb["kind"] == "gil" and wb["held_by"] == holder, "waiter %d blocked_on %s" % (w, wb))
    sources = f["sources"]
    for lwp in [holder] + list(f["waiters"]):
        expect(any(s.startswith("native stack of LWP %d (frame #" % lwp) for s in sources), "no stack source for LWP %d: %s" % (lwp, sources))
    expect(any(gil_holder_source(report, s, holder) for s in sources), "no GIL holder source: %s" % sources)
    expect("from native stack of LWP %d" % holder in text, "the text does not show the sources")
    expect("HANG  the GIL's holder is blocked" in text, "no HANG section:\n" + text[:3000])


def attached_tstate(report, lwp):
    """The thread state LWP runs, as the report lists it, checked to be attached (3.13+ state 1)."""
    for rt in report["runtimes"]:
        for interp in rt["interpreters"]:
            for ts in interp["tstates"]:
                if ts["lwp"] == lwp:
                    expect(ts["state"] == "attached", "the thread state of LWP %d is not attached: %s" % (lwp, ts))
                    return hex_int(ts["address"])
    raise AssertionError("no thread state runs on LWP %d" % lwp)


def check_stop_the_world(report, text, facts, cycle):
    """A free-threaded stop of the world (gc.collect()) waiting for an attached thread that blocks:
    in a cycle through a mutex and a join, or alone (stop-the-world-blocked)."""
    stopper, attached = facts["stopper"], facts["attached"]
    ts = attached_tstate(report, attached)
    by = threads_by_lwp(report)
    b = by[stopper]["blocked_on"]
    expect(b["kind"] == "stop-the-world" and b["held_by"] == attached and hex_int(b["object"]) == ts,
           "the stopper's blocked_on: %s" % b)
    expect(b["function"] in ("stop_the_world", "_PyEval_StopTheWorld"), "stopper's function %r" % b["function"])
    # What asked for the stop: gc.collect()'s collection, or 3.13t's first new thread state.
    why = "_PyGC_ImmortalizeDeferredObjects" if facts.get("new_tstate") else "gc_collect"
    expect(b.get("call", "").startswith(why), "the stopper's call %r, expected %s..." % (b.get("call"), why))
    stops = "stops the world (for %s), waiting for LWP %d to detach" % (b["call"], attached)
    expect("[%s]" % stops in text, "the thread row does not say the stop:\n" + text)
    if cycle:
        main = facts["main_lwp"]
        check_deadlock(report, text, [(main, "join", hex_int(facts["stopper_pthread"]), stopper), (stopper, "stop-the-world", ts, attached),
                                      (attached, "mutex", hex_int(facts["mutex"]), main)])
        msg = findings(report, "deadlock")[0]["message"]
        expect("LWP %d %s" % (stopper, stops) in msg, "deadlock message: " + msg)
        expect("LWP %d is attached to Python while it waits for mutex %s" % (attached, facts["mutex"]) in msg, "deadlock message: " + msg)
        expect(not findings(report, "stop-the-world-blocked"), "stop-the-world-blocked beside the cycle")
        return
    expect(not findings(report, "deadlock"), "a deadlock where there is none: %s" % findings(report, "deadlock"))
    g = findings(report, "stop-the-world-blocked")
    expect(len(g) == 1, "one stop-the-world-blocked expected, got %s" % [f["message"] for f in report["findings"]])
    f = g[0]
    expect(f["lwp"] == attached and f["waiters"] == [stopper] and f["severity"] == "warning", "finding %s" % f)
    expect("cond_wait" in f["function"], "function %r" % f["function"])
    wb = by[attached]["blocked_on"]
    expect(wb["kind"] == "condition" and wb["at"]["native"]["function"].endswith("Gate::waitFor"), "attached thread's blocked_on: %s" % wb)
    expect(f["message"].startswith("LWP %d is attached to Python and waits on a condition variable in " % attached) and
           "while LWP %d stops the world (for %s) and waits for it to detach" % (stopper, b["call"]) in f["message"], "message: " + f["message"])
    # The state a stop made inside new_threadstate is making is listed, unbound: no orphan.
    expect(not findings(report, "orphan-tstate"), "orphan-tstate: %s" % [f["message"] for f in findings(report, "orphan-tstate")])
    for lwp in (attached, stopper):
        expect(any(s.startswith("native stack of LWP %d (frame #" % lwp) for s in f["sources"]), "no stack source for LWP %d" % lwp)
    expect(any(s.startswith("PyThreadState.state at %#x (layout from " % ts) and s.endswith("attached, run by LWP %d" % attached)
               for s in f["sources"]), "no thread-state source: %s" % f["sources"])
    expect("HANG  a stop of the world waits for a blocked thread" in text and text.index("HANG") < text.index("FINDINGS"),
           "no HANG section:\n" + text[:3000])


def check_hang(args, facts, report, text, exe, where):
    case = args.case
    if args.program == "rlock":
        a, b = hex_int(facts["a"]), hex_int(facts["b"])
        check_deadlock(report, text, [(facts["t1"], "python-lock", b, facts["t2"]), (facts["t2"], "python-lock", a, facts["t1"])])
        if report["target"]["kind"] == "live":
            # An RLock lives in a pymalloc arena, which the stop does not copy (stacks, struct
            # pthread, the words around the first argument: here the lock's sem_t, from malloc).
            by = threads_by_lwp(report)
            for lwp in (facts["t1"], facts["t2"]):
                expect(by[lwp]["blocked_on"].get("owner_read_after_resume") is True,
                       "LWP %d: the RLock's owner was read after the resume and not said so: %s" % (lwp, by[lwp]["blocked_on"]))
        return
    if case == "gil-mutex":
        m = hex_int(facts["mutex"])
        g, o = facts["holder_of_gil"], facts["holder_of_mutex"]
        check_deadlock(report, text, [(g, "mutex", m, o), (o, "gil", None, g)])
        # gdb with libc6-dbg reads the same owner.
        expect(gdb_owner(exe, where, owner_exprs(case, facts)[0]) == o, "gdb reads another owner")
    elif case == "mutex-abba":
        m1, m2 = hex_int(facts["m1"]), hex_int(facts["m2"])
        check_deadlock(report, text, [(facts["t1"], "mutex", m2, facts["t2"]), (facts["t2"], "mutex", m1, facts["t1"])])
        if not facts["gil"]:
            expect(any("without a GIL" in n for n in report.get("wait_notes", [])), "no word of the missing GIL: %s" % report.get("wait_notes"))
            expect("without a GIL" in text, "the HANG section says there is no GIL")
    elif case in ("stw-mutex", "stw-blocked", "stw-new-tstate"):
        check_stop_the_world(report, text, facts, case == "stw-mutex")
    elif case == "cycle3":
        m1, m2 = hex_int(facts["m1"]), hex_int(facts["m2"])
        a, b, c = facts["a"], facts["b"], facts["c"]
        check_deadlock(report, text, [(a, "mutex", m1, b), (b, "mutex", m2, c), (c, "gil", None, a)])
        expect(gdb_owner(exe, where, owner_exprs(case, facts)[0]) == c, "gdb reads another owner")
    elif case == "join":
        w = facts["worker"]
        check_deadlock(report, text, [(facts["main_lwp"], "join", hex_int(facts["worker_pthread"]), w), (w, "gil", None, facts["main_lwp"])])
    elif case == "rwlock":
        rw = hex_int(facts["rwlock"])
        r, w = facts["reader"], facts["writer"]
        check_deadlock(report, text, [(r, "rwlock", rw, w), (w, "gil", None, r)])
        expect(gdb_owner(exe, where, owner_exprs(case, facts)[0]) == w, "gdb reads another writer")
    elif case in ("read", "poll", "sleep", "syscall"):
        # syscall(SYS_read, ...): no wrapper names the call, the number in the registers does.
        calls = {"read": ["read"], "poll": ["poll"], "sleep": ["sleep", "nanosleep", "clock_nanosleep"], "syscall": ["read"]}[case]
        check_blocked_holder(report, text, facts["holder"], facts["waiters"], calls)
    elif case == "busy":
        expect(not findings(report, "deadlock") and not findings(report, "gil-held-while-blocked"),
               "a hang finding on a healthy process: %s" % [f["message"] for f in report["findings"]])
        b = threads_by_lwp(report)[facts["condition"]]["blocked_on"]
        expect(b["kind"] == "condition" and b["held_by"] is None, "condition variable thread: %s" % b)
        expect("HANG" not in text, "a HANG section on a healthy process")
    else:
        raise AssertionError("unknown case " + case)


def check_abort(facts, report, text):
    crash = report["target"]["crash"]
    expect(crash and crash["signal_name"] == "SIGABRT" and crash["lwp"] == facts["worker"], "crash: %s" % crash)
    abort = crash.get("abort")
    expect(abort is not None, "no crash.abort: %s" % crash)
    if "line" in facts:
        expect(abort["kind"] == "assert", "abort %s" % abort)
        expect(abort["message"].endswith("Assertion `replicas == 3 && \"the config says three\"' failed."), "assert message %r" % abort["message"])
        expect(":%d:" % facts["line"] in abort["message"], "assert line not in %r" % abort["message"])
        expect("assertion failed: " + abort["message"] in text.replace("\n  ", " "), "CRASH section lacks the assertion:\n" + text[:2000])
    else:
        expect(abort["kind"] == "uncaught-exception" and abort["type"] == facts["type"], "abort %s" % abort)
        expect(abort["message"] == facts["message"], "message %r, expected %r" % (abort["message"], facts["message"]))
        expect("uncaught exception %s: %s" % (facts["type"], facts["message"]) in text, "CRASH section:\n" + text[:2000])
    # The program's _start (crt1.o, no DWARF) sits after main's CU, whose last line sequence ends
    # before it: no source line is true there (gdb and addr2line say none; elfutils 0.188 alone
    # answered the sequence's last row).
    starts = [f for f in crash["frames"] if f.get("function") == "_start"]
    if "line" in facts:  # the assert fails on the main thread, which _start began
        expect(starts, "no _start frame in the crash's frames: %s" % [f.get("function") for f in crash["frames"]])
    for f in starts:
        expect(f.get("file") is None and f.get("line") is None, "_start given a source line: %s" % f)


def stopper_caught_running(args, facts, report, attempt):
    """stop_the_world wakes every millisecond to park newly detached threads: a stop caught in
    that moment runs, and waits for nothing. Taken again then (at most 3 times), and said."""
    if not args.case.startswith("stw-") or attempt == 2:
        return False
    b = threads_by_lwp(report)[facts["stopper"]].get("blocked_on") or {}
    if b.get("kind") != "none":
        return False
    print("the stopping thread was caught between two waits (attempt %d); again" % (attempt + 1))
    return True


def wait_asleep(pid, facts, timeout=30):
    """SETTLE, then until every waiter (or sleeper) the program named sleeps in the kernel: on a
    loaded machine a thread that just gave up the GIL can still be on its way to take_gil after
    SETTLE, and a joining thread on its way to pthread_join (hangs.host.join failed so once)."""
    time.sleep(SETTLE)
    deadline = time.monotonic() + timeout
    for lwp in facts.get("waiters", []) + facts.get("sleepers", []):
        while time.monotonic() < deadline:
            try:
                with open("/proc/%d/task/%d/stat" % (pid, lwp)) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] in ("S", "D"):
                        break
            except OSError:
                break
            time.sleep(0.05)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--program", choices=["host", "rlock", "ctypes"], default="host")
    p.add_argument("--python", help="3.11 (Debian's), 3.12, 3.13 (pyenv's), 3.13t (scripts/python-freethreaded's)")
    p.add_argument("--kind", choices=["gcore", "kernel", "crash", "live"], default="gcore")
    p.add_argument("case")
    args = p.parse_args()
    argv = argv_of(args)
    exe = argv[0]
    settle = lambda proc, facts: wait_asleep(proc.pid, facts)  # noqa: E731
    if args.kind == "live":
        with scenario.running(argv) as (proc, facts):
            wait_asleep(proc.pid, facts)
            for attempt in range(3):
                status, report, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(proc.pid), "--json"])
                _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(proc.pid)])
                if not stopper_caught_running(args, facts, report, attempt):
                    break
            check_hang(args, facts, report, text, exe, proc.pid)
            expect(proc.poll() is None, "the process ended")
        print("PASS %s %s (live)" % (args.program, args.case))
        return
    for attempt in range(3):
        facts, core = scenario.take_core(argv, args.kind, after_ready=None if args.kind == "crash" else settle)
        if not args.case.startswith("stw-") or not stopper_caught_running(args, facts, scenario.run_pytstates(
                args.pytstates, ["check", "--core", core, "--json"])[1], attempt):
            break
        scenario.cleanup(core)
    try:
        status, report, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
        _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core])
        # gdb's own reading of the same core (one gdb run, which also reads the lock owners)
        where = "%s %s %s core" % (args.program, args.case, args.kind)
        READ[core] = gdb_oracle.read(exe, core, exprs=owner_exprs(args.case, facts) if args.kind != "crash" else ())
        oracle = gdb_oracle.compare(READ[core], report, where)
        gdb_oracle.summarize(oracle, READ[core], where)
        if args.kind == "crash":
            check_abort(facts, report, text)
        else:
            check_hang(args, facts, report, text, exe, core)
            if args.case != "busy":
                expect(status == (1 if findings(report, "deadlock") else status), "exit status %d with a deadlock" % status)
            if args.kind == "kernel":  # a watchdog's SIGABRT: the signal and the hang
                expect(report["target"]["crash"]["signal_name"] == "SIGABRT" and "abort" not in report["target"]["crash"],
                       "crash: %s" % report["target"]["crash"])
                expect("CRASH" in text and "HANG" in text if args.case != "busy" else "CRASH" in text, "CRASH and HANG:\n" + text[:2000])
            # Without the wait analysis: no blocked_on, no hang finding.
            _, plain, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json", "--no-waits"])
            expect(all("blocked_on" not in t for t in plain["threads"]) and not findings(plain, "deadlock"), "--no-waits still waits")
        expect(not oracle.problems, "%s: pytstates and gdb's own reading differ:\n  %s" % (where, "\n  ".join(oracle.problems)))
    finally:
        scenario.cleanup(core)
    print("PASS %s %s (%s core)" % (args.program, args.case, args.kind))


if __name__ == "__main__":
    main()
