#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Python's own waits: `pytstates check --json` on cores (gcore) and live processes of programs
that deadlock on plain threading.Lock (with-blocks: the holders claimed; acquire(): no claim) and
of a zoo of waits (Condition, Event, Queue, Semaphore, join, sleep), held against what each
program printed about itself (get_native_id(), id() of its locks, which thread holds which) and
against gdb's own reading of the same core or process: lock_PyThread_acquire_lock's `self` in each
waiter's native stack (DWARF; 3.14+, where GCC keeps it nowhere, the PyMutex address the waiter
parks on less gdb's offset of lockobject.lock), `py-bt`'s `_thread.lock object at remote 0x...` where
CPython's gdb scripts load (Debian's python3.11-dbg), and each lock's own `locked` state.

Debian unstable's 3.14 / 3.15 (scripts/debian-python's tree, glibc 2.43, DWARF of the release build):
run as a copy whose PT_INTERP is the tree's ld.so (tests/lib/sid_python.py), cores by the kernel
(`--kind kernel`: gcore dumps glibc 2.43's threads with all-zero stacks), read with --sysroot. A
machine where the tree cannot be had says so and exits 77 (skipped)."""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import debugger_batch  # noqa: E402
import gdb_oracle  # noqa: E402
import pyenv  # noqa: E402
import scenario  # noqa: E402
import sid_python  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
SID = ("3.14", "3.15")  # Debian unstable's, from scripts/debian-python
SETTLE = 1.0  # READY comes just before the last blocking call


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def python_for(version):
    """The suite's Python, else pyenv's X.Y; None when this machine has none (said, not passed)."""
    if version in (None, scenario.PYTHON_VERSION):
        return scenario.PYTHON
    if version == "3.13t":  # free-threaded, with DWARF: scripts/python-freethreaded's cached build
        out = subprocess.run([os.path.join(TOP, "scripts", "python-freethreaded"), "3.13"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        if out.returncode != 0:
            print("a free-threaded CPython 3.13 cannot be built here: %s" % out.stderr.strip())
            return None
        return os.path.join(out.stdout.strip().splitlines()[-1], "bin", "python3.13t")
    found = pyenv.python(version)
    return found[1] if found else None


def gdb_reading(python, target, lwps, debug_dir=None):
    """What gdb reads, by DWARF alone: per LWP, lock_PyThread_acquire_lock's self (else, 3.14+, the
    address _PyParkingLot_Park waits on less lockobject's offset of its PyMutex, both as gdb reads
    them); per LWP, the `_thread.lock object at remote 0x...` py-bt names (when CPython's gdb scripts load)."""
    argv = ["gdb", "-q", "-nx", "-batch"] + (["-iex", "set debug-file-directory " + debug_dir] if debug_dir else [])
    argv += ["-ex", "set pagination off", "-ex", "print/d (long)&((lockobject*)0)->lock", "-ex", "thread apply all bt 16"]
    if python == scenario.PYTHON:  # Debian's python3.11-dbg gdb scripts (py-bt): -nx skips auto-load's settings, not the scripts
        argv += ["-ex", "source /usr/share/gdb/auto-load/usr/bin/python%s-gdb.py" % scenario.PYTHON_VERSION,
                 "-ex", "thread apply all py-bt"]
    argv += ["-p", str(target)] if isinstance(target, int) else [python, target]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240).stdout
    selves, pybt, parked = {}, {}, {}
    m = re.search(r"^\$1 = (\d+)$", out, re.M)
    mutex_offset = int(m.group(1)) if m else None
    lwp = None
    for line in out.splitlines():
        # "Thread 2 (LWP n)" where gdb finds no libthread_db for the target's glibc (the tree's 2.43)
        m = re.match(r"Thread \d+ \((?:Thread 0x[0-9a-f]+ \()?LWP (\d+)(?: \"[^\"]*\")?\)", line)
        if m:
            lwp = int(m.group(1))
            continue
        # 3.15: Argument Clinic's _thread_lock_acquire(_impl) / _thread_lock___enter__(_impl)
        m = re.search(r"(?:lock_PyThread_acquire_lock|_thread_lock_\w+) \(.*?\bself=(0x[0-9a-f]+)", line)
        if m and lwp and lwp not in selves:
            selves[lwp] = int(m.group(1), 16)
        m = re.search(r"_PyParkingLot_Park\S* \(addr=(?:addr@entry=)?(0x[0-9a-f]+)", line)
        if m and lwp and lwp not in parked:
            parked[lwp] = int(m.group(1), 16)
        if re.search(r"(?:lock_PyThread_acquire_lock|_thread_lock_\w+) \(.*?\b(?:self|op)=<optimized out>", line) and lwp in parked and mutex_offset is not None:
            selves.setdefault(lwp, parked[lwp] - mutex_offset)
        m = re.search(r"_thread\.lock object at remote (0x[0-9a-f]+)", line)
        if m and lwp and lwp not in pybt:
            pybt[lwp] = int(m.group(1), 16)
    for w in lwps:
        expect(w in selves, "gdb shows no lock acquire's self (nor its parking-lot address) on LWP %d:\n%s" % (w, out[-3000:]))
    return selves, pybt, out


def blocked(report):
    return {t["lwp"]: t.get("blocked_on") or {} for t in report["threads"]}


def hex_int(s):
    return int(s, 16) if s else None


def check_abba(report, text, facts, mode, where):
    t1, t2 = facts["t1"], facts["t2"]
    a, b = int(facts["a"], 16), int(facts["b"], 16)
    by = blocked(report)
    # T1 holds A and waits for B; T2 holds B and waits for A.
    for lwp, waits, holder in ((t1, b, t2), (t2, a, t1)):
        w = by[lwp]
        expect(w.get("kind") == "python-lock", "%s: LWP %d kind %s" % (where, lwp, w))
        expect(hex_int(w.get("object")) == waits, "%s: LWP %d waits on %s, the program says %#x" % (where, lwp, w.get("object"), waits))
        name = {"attr": "other._lock", "deep": "lock"}.get(mode, "second")
        expect(w.get("python_name") == name, "%s: LWP %d python_name %r, expected %r" % (where, lwp, w.get("python_name"), name))
        if mode == "deep":
            # The holding `with` is DEPTH frames below the waiting one: found all the same.
            with_line = facts["lines"]["deep-with"] if facts["version"] != "3.9" else None
            expect(w.get("held_by") == holder and w.get("holder_evidence") == "with-block" and w.get("holder_python_name") == "first" and
                   w["holder"]["function"] == "take_deep" and w["holder"]["line"] == facts["lines"]["deep-holds"] and
                   w.get("holder_with_line") == with_line,
                   "%s: LWP %d: %s; the program says LWP %d holds it in take_deep(), %d frames down" % (where, lwp, w, holder, facts["depth"]))
        if mode in ("attr", "with"):
            # How the holder's frame names what it holds (3.12's attributes aside, which the object reader misses).
            held_name = "self._lock" if mode == "attr" else "first"
            expect(w.get("holder_python_name") == held_name or (mode == "attr" and facts["version"] == "3.12"),
                   "%s: LWP %d: the holder names the lock %r, expected %r" % (where, lwp, w.get("holder_python_name"), held_name))
        if mode == "attr":
            expect(w.get("held_by") == holder and w.get("holder_evidence") == "with-block" and w["holder"]["function"] == "transfer" and
                   w["holder"]["line"] == facts["lines"]["attr-waits"] and w.get("holder_with_line") == (facts["lines"]["attr-with"] if facts["version"] != "3.9" else None),
                   "%s: LWP %d: %s; the program says LWP %d holds it in transfer()" % (where, lwp, w, holder))
        elif mode == "with":
            expect(w.get("held_by") == holder and w.get("holder_evidence") == "with-block",
                   "%s: LWP %d held_by %s (%s), the program says LWP %d holds it" % (where, lwp, w.get("held_by"), w.get("holder_evidence"), holder))
            # 3.9 gives a with's cleanup the body's last line: the `with` line is not said there.
            with_line = facts["lines"]["with-first"] if facts["version"] != "3.9" else None
            expect(w["holder"]["line"] == facts["lines"]["waits"] and w.get("holder_with_line") == with_line,
                   "%s: LWP %d's holder at line %s, `with` at %s; expected %d and %d" % (
                       where, lwp, w["holder"]["line"], w.get("holder_with_line"), facts["lines"]["waits"], with_line or 0))
        elif mode == "acquire":
            # lock.acquire() leaves nothing in the frames: nothing shown, nothing claimed.
            expect(w.get("held_by") is None and w.get("holder_evidence") == "none", "%s: LWP %d claims a holder: %s" % (where, lwp, w))
    dl = [f for f in report["findings"] if f["code"] == "deadlock"]
    if mode in ("with", "attr", "deep"):
        expect(len(dl) == 1, "%s: one deadlock finding expected, got %s" % (where, [f["message"] for f in report["findings"]]))
        cycle = {s["lwp"]: (s["waits_for"], hex_int(s["object"]), s["held_by"], s.get("holder_evidence")) for s in dl[0]["cycle"]}
        want = {t1: ("python-lock", b, t2, "with-block"), t2: ("python-lock", a, t1, "with-block")}
        expect(cycle == want, "%s: cycle %s, expected %s" % (where, cycle, want))
        expect(any(s.startswith("the with-block of LWP %d holding %#x" % (t2, b)) for s in dl[0]["sources"]),
               "%s: no with-block source for LWP %d: %s" % (where, t2, dl[0]["sources"]))
        expect("HANG  deadlock: 2 threads wait for each other" in text and re.search(r"holds it (as `\S+` )?in a with-block", text),
               "%s: the text tells no hang:\n%s" % (where, text[:3000]))
    else:
        expect(not dl, "%s: a deadlock claimed with no evidence: %s" % (where, [f["message"] for f in dl]))
    print("%s: LWP %d waits for %#x held by %s, LWP %d waits for %#x held by %s; %d deadlock finding(s)" % (
        where, t1, b, by[t1].get("held_by"), t2, a, by[t2].get("held_by"), len(dl)))
    return [t1, t2]


def pybt_frames(gdb_out):
    """Per LWP, the Python frames gdb's py-bt prints (its `File "...", line N, in f` lines)."""
    counts, lwp = {}, None
    for line in gdb_out.splitlines():
        m = re.match(r"Thread \d+ \((?:Thread 0x[0-9a-f]+ \()?LWP (\d+)", line)
        if m:
            lwp = int(m.group(1))
        elif lwp and re.match(r'\s+File "', line):
            counts[lwp] = counts.get(lwp, 0) + 1
    return counts


def tstate_on(report, lwp):
    for rt in report["runtimes"]:
        for interp in rt["interpreters"]:
            for ts in interp["tstates"]:
                if ts["lwp"] == lwp:
                    return ts
    raise AssertionError("no thread state runs on LWP %d" % lwp)


def check_frames_shown(pytstates, extra, facts, where, gdb_out):
    """The deep ABBA with --frames 0, 5 and 20: the same findings, blocked_on and exit status (the
    analyses read every stack whole); each shows the first N frames of a stack and says how many it
    left out; the stack's whole length is what gdb's py-bt prints, where CPython's gdb scripts load."""
    runs = {}
    for n in (0, 5, 20):
        status, report, _ = scenario.run_pytstates(pytstates, ["check", "--json", "--frames", str(n)] + extra)
        text_status, text, _ = scenario.run_pytstates(pytstates, ["check", "--frames", str(n)] + extra)
        expect(status == 1 and text_status == 1, "%s --frames %d: exit %d (JSON), %d (text); 1 expected" % (where, n, status, text_status))
        expect("HANG  deadlock: 2 threads wait for each other" in text, "%s --frames %d: no HANG:\n%s" % (where, n, text[:3000]))
        runs[n] = (report, text)
    whole = runs[20][0]
    for n, (report, _) in runs.items():
        expect(report["findings"] == whole["findings"], "%s: --frames %d finds %s, --frames 20 %s" % (
            where, n, [f["message"] for f in report["findings"]], [f["message"] for f in whole["findings"]]))
        expect(blocked(report) == blocked(whole), "%s: --frames %d: other blocked_on than --frames 20" % (where, n))
    pybt = pybt_frames(gdb_out)
    for lwp in (facts["t1"], facts["t2"]):
        full = tstate_on(whole, lwp)
        total = len(full["frames"]) + full.get("frames_not_shown", 0)
        # down() DEPTH times and take_deep, then threading's run/_bootstrap_inner/_bootstrap
        expect(total == facts["depth"] + 4, "%s: LWP %d has %d Python frames, the program runs %d" % (where, lwp, total, facts["depth"] + 4))
        expect(full["frames"][facts["depth"]]["function"] == "take_deep", "%s: LWP %d frame #%d: %s" % (where, lwp, facts["depth"], full["frames"][facts["depth"]]))
        if lwp in pybt:
            expect(pybt[lwp] == total, "%s: LWP %d: gdb's py-bt prints %d Python frames, pytstates reads %d" % (where, lwp, pybt[lwp], total))
        for n, (report, text) in runs.items():
            ts = tstate_on(report, lwp)
            shown = min(n, total)
            expect(ts["frames"] == full["frames"][:shown] and ts.get("frames_not_shown") == (total - shown or None),
                   "%s --frames %d: LWP %d shows %d frames, frames_not_shown %s; expected %d and %d" % (
                       where, n, lwp, len(ts["frames"]), ts.get("frames_not_shown"), shown, total - shown))
            said = "(%d frames not shown: --frames 0)" % total if n == 0 else "\u2026 %d more frames: --frames" % (total - n)
            expect(n >= total or said in text, "%s --frames %d: the text does not say %r:\n%s" % (where, n, said, text[:4000]))
    expect("(no Python frames)" not in runs[0][1], "%s --frames 0 says a thread state has no Python frames:\n%s" % (where, runs[0][1][:3000]))
    print("%s: --frames 0, 5, 20: the same %d finding(s), exit 1; %s Python frames on the deadlocked threads (py-bt: %s)" % (
        where, len(whole["findings"]), [len(tstate_on(whole, l)["frames"]) for l in (facts["t1"], facts["t2"])],
        [pybt.get(l) for l in (facts["t1"], facts["t2"])]))


def check_zoo(report, facts, where):
    lwps, objects = facts["lwps"], {k: int(v, 16) for k, v in facts["objects"].items()}
    by = blocked(report)
    names = {"condition": "cond", "event": "ready", "queue": "jobs", "semaphore": "permits", "join": "sleeping"}
    for kind in ("condition", "event", "queue", "semaphore", "join"):
        w = by[lwps[kind]]
        expect(w.get("kind") == kind and hex_int(w.get("python_object")) == objects[kind],
               "%s: LWP %d (%s) blocked_on %s; the program says %#x" % (where, lwps[kind], kind, w, objects[kind]))
        expect(w.get("python_name") == names[kind], "%s: %s named %r, expected %r" % (where, kind, w.get("python_name"), names[kind]))
        if kind == "join":
            expect(w.get("held_by") == lwps["sleep"], "%s: the join is held by %s, the joined thread is LWP %d" % (where, w.get("held_by"), lwps["sleep"]))
        else:
            expect(w.get("held_by") is None, "%s: %s claims a holder: %s" % (where, kind, w))
    # time.sleep: clock_nanosleep, select() before 3.11
    expect(by[lwps["sleep"]].get("call") in ("clock_nanosleep", "select"), "%s: the sleeper: %s" % (where, by[lwps["sleep"]]))
    for lwp, holder in ((lwps["t1"], lwps["t2"]), (lwps["t2"], lwps["t1"])):
        expect(by[lwp].get("held_by") == holder and by[lwp].get("holder_evidence") == "with-block", "%s: ABBA LWP %d: %s" % (where, lwp, by[lwp]))
    dl = [f for f in report["findings"] if f["code"] == "deadlock"]
    expect(len(dl) == 1 and {s["lwp"] for s in dl[0]["cycle"]} == {lwps["t1"], lwps["t2"]},
           "%s: one deadlock of the ABBA pair expected: %s" % (where, [f["message"] for f in report["findings"]]))
    print("%s: %s" % (where, ", ".join("%s LWP %d held_by %s" % (k, lwps[k], by[lwps[k]].get("held_by")) for k in sorted(names))))
    # 3.13+ joins by a ThreadHandle's event (the parking lot): no lock object to compare with gdb.
    joins_on_lock = tuple(int(x) for x in facts["version"].split(".")) < (3, 13)
    return [lwps[k] for k in ("t1", "t2", "condition", "event", "queue", "semaphore") + (("join",) if joins_on_lock else ())]


def in_debugger(args, python, core, cli):
    """py-tstates-check in gdb (the sourced script) or lldb (the plugin) on the same core: the
    same blocked_on and findings as the CLI, and the HANG section with the holders' with-blocks."""
    if args.debugger == "gdb":
        _, out = debugger_batch.gdb(args.gdb_script, [python, core], debugger_batch.marked("json", "py-tstates-check --json") +
                                    debugger_batch.marked("text", "py-tstates-check"), timeout=240, pagination=False)
        ours, text = debugger_batch.as_json(debugger_batch.between(out, "json")), debugger_batch.between(out, "text")
    else:
        _, lines = debugger_batch.lldb(args.plugin, ["--core", core, python], ["py-tstates-check --json", "py-tstates-check"], timeout=240)
        out = debugger_batch.sections(lines)
        expect("py-tstates-check --json" in out, "lldb did not run py-tstates-check:\n" + "\n".join(lines)[-3000:])
        ours, text = debugger_batch.as_json(out["py-tstates-check --json"]), out.get("py-tstates-check", "")
    strip = lambda r: [{k: v for k, v in f.items()} for f in r["findings"]]
    expect(strip(ours) == strip(cli), "%s and the CLI find different things:\n%s\n%s" % (args.debugger, ours["findings"], cli["findings"]))
    expect([t.get("blocked_on") for t in ours["threads"]] == [t.get("blocked_on") for t in cli["threads"]],
           "%s and the CLI: different blocked_on" % args.debugger)
    expect("HANG  deadlock: 2 threads wait for each other" in text and re.search(r"holds it (as `\S+` )?in a with-block", text),
           "%s's text tells no hang:\n%s" % (args.debugger, text[:3000]))
    print("%s: py-tstates-check says what the CLI says (%d findings)" % (args.debugger, len(ours["findings"])))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--kind", choices=["gcore", "kernel", "live"], default="gcore")
    p.add_argument("--python")
    p.add_argument("--python314-dir", default=os.path.join(TOP, "build", "python314"), help="where scripts/debian-python unpacks 3.14")
    p.add_argument("--python315-dir", default=os.path.join(TOP, "build", "python315"), help="where scripts/debian-python unpacks 3.15")
    p.add_argument("--debugger", choices=["gdb", "lldb"], help="also py-tstates-check in this debugger on the core")
    p.add_argument("--gdb-script")
    p.add_argument("--plugin")
    p.add_argument("program", choices=["with", "attr", "acquire", "deep", "zoo"])
    args = p.parse_args()
    sid, env, sysroot, debug_dir = None, None, [], None
    if args.python in SID:
        if args.kind == "gcore":
            raise SystemExit("%s: gcore dumps glibc 2.43's threads with all-zero stacks: --kind kernel" % args.python)
        try:
            root = sid_python.unpacked_root(TOP, args.python, args.python314_dir if args.python == "3.14" else args.python315_dir)
        except RuntimeError as e:
            print("%s: not run" % e)
            return 77  # no tree on this machine: skipped, never passed
        sid = sid_python.SidPython(root, args.python, with_debug_files=True)
        python = sid.executable
        env = dict(os.environ)
        env.update(e.split("=", 1) for e in sid.environment)
        sysroot = ["--sysroot", root]
        debug_dir = os.path.join(root, "usr", "lib", "debug")
    else:
        if args.kind == "kernel":
            raise SystemExit("--kind kernel is for Debian unstable's %s" % " and ".join(SID))
        python = python_for(args.python)
    if python is None:
        print("CPython %s is not installed here (pyenv, scripts/python-freethreaded): not run" % args.python)
        return 77  # ctest's SKIP_RETURN_CODE: counted as skipped, never as passed
    try:
        return run(args, python, env, sysroot, debug_dir)
    finally:
        if sid:
            sid.close()


def run(args, python, env, sysroot, debug_dir):
    script = os.path.join(HERE, "waits_zoo.py" if args.program == "zoo" else "lock_abba.py")
    argv = [python, script] + ([] if args.program == "zoo" else [args.program])
    where = "%s %s %s" % (args.program, args.kind, os.path.basename(python))

    def check(target, facts, extra):
        status, report, _ = scenario.run_pytstates(args.pytstates, ["check", "--json"] + extra)
        _, text, _ = scenario.run_pytstates(args.pytstates, ["check"] + extra)
        # acquire: no finding, no hang; its kernel core (SIGABRT) is a CRASH all the same
        expect(status == (1 if args.program != "acquire" else scenario.quiet_status(args.kind)), "%s: check exited %d" % (where, status))
        waiters = check_zoo(report, facts, where) if args.program == "zoo" else check_abba(report, text, facts, args.program, where)
        selves, pybt, gdb_out = gdb_reading(python, target, waiters, debug_dir)
        by = blocked(report)
        for lwp in waiters:
            expect(hex_int(by[lwp]["object"]) == selves[lwp], "%s: LWP %d waits on %s, gdb reads self=%#x" % (where, lwp, by[lwp]["object"], selves[lwp]))
            if lwp in pybt:
                expect(pybt[lwp] == selves[lwp], "%s: LWP %d: py-bt names %#x" % (where, lwp, pybt[lwp]))
        print("%s: gdb reads the same lock object for %d waiters (py-bt for %d)" % (where, len(waiters), len(pybt)))
        if args.program == "deep":
            check_frames_shown(args.pytstates, extra, facts, where, gdb_out)
        return report

    if args.kind in ("gcore", "kernel"):
        facts, core = scenario.take_core(argv, args.kind, env=env, after_ready=lambda proc, facts: time.sleep(SETTLE))
        try:
            report = check(core, facts, ["--core", core, "--exe", python] + sysroot)
            if args.program == "with":
                gdb_oracle.check(python, core, report, where, debug_dir=debug_dir)
            if args.debugger:
                in_debugger(args, python, core, report)
        finally:
            scenario.cleanup(core)
    else:
        with scenario.running(argv, env=env) as (proc, facts):
            time.sleep(SETTLE)
            # live: the process names its own files; the tree's debug files as a user names them
            check(proc.pid, facts, ["--pid", str(proc.pid)] + (["--debug-dir", debug_dir] if debug_dir else []))
            expect(proc.poll() is None, "%s: the process did not survive pytstates and gdb" % where)
    print("%s: passed" % where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
