# SPDX-License-Identifier: Apache-2.0
"""What pytstates must say about an embedder, held against what the calls recorded about
themselves (tests/scenarios/embedders/truth.py) and against gdb's own walk of the same core.

The rule: a thread state runs on a thread only by evidence on that thread. Each recorded call's
thread runs exactly one thread state, in the interpreter the call recorded, whose stack holds the
call's function; no thread runs two; a thread state with Python frames runs somewhere; the spinner
holds the GIL; and no finding is an error."""
import json
import os
import re
import subprocess
import sys

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import native_check  # noqa: E402


class Mismatch(AssertionError):
    pass


def expect(cond, what, report=None):
    if not cond:
        if report is not None:
            print(summary(report))
        raise Mismatch(what)


def summary(report):
    """The parts of a report these tests look at, one line each."""
    lines = []
    for _, interp in interpreters(report):
        lines.append("interpreter %d %s gil_holder %s" % (interp["id"], interp["address"], interp["gil_holder"]))
        for ts in interp["tstates"]:
            lines.append("  tstate %s lwp %s made_by %s native_thread_id %s parked %s gil %s frames %s" % (
                ts["address"], ts["lwp"], ts.get("made_by_lwp", "-"), ts.get("native_thread_id"), ts.get("parked"),
                ts["holds_gil"], [f["function"] for f in ts["frames"]]))
    for t in report["threads"]:
        top = t.get("native_frames") or [{}]
        lines.append("thread %d current %s autotss %s native %s" % (t["lwp"], t["current_tstate"], t["autotss_tstate"], top[0].get("function")))
    for f in report["findings"]:
        lines.append("finding %s %s lwp %s: %s sources %s" % (f["severity"], f["code"], f["lwp"], f["message"], f.get("sources")))
    return "\n".join(lines)


def interpreters(report):
    return [(rt, i) for rt in report["runtimes"] for i in rt["interpreters"]]


def running(report, where, nested=None):
    """{LWP: (interpreter, thread state)} of the thread states that run on a thread; fails when a
    thread runs two, or a thread state with Python frames runs nowhere or is not called parked.
    nested: {LWP: function} of threads where an embedder's callbacks call each other, each under
    its own interpreter's state (WeeChat's scripts): the states beneath, with frames, sit on that
    thread too; the one whose frames hold `function` runs."""
    runs = {}
    for rt, interp in interpreters(report):
        for ts in interp["tstates"]:
            if ts["lwp"] is None:
                expect(not ts["frames"], "%s: thread state %s has Python frames (%s) but runs on no thread"
                       % (where, ts["address"], [f["function"] for f in ts["frames"]]), report)
                expect(ts.get("parked") is True, "%s: thread state %s runs nowhere and is not parked" % (where, ts["address"]), report)
                continue
            if nested and ts["lwp"] in nested:
                if nested[ts["lwp"]] not in [f["function"] for f in ts["frames"]]:
                    continue
            expect(ts["lwp"] not in runs, "%s: LWP %d runs two thread states, %s and %s"
                   % (where, ts["lwp"], runs.get(ts["lwp"], ({}, {}))[1].get("address"), ts["address"]), report)
            runs[ts["lwp"]] = (interp, ts)
    return runs


def attribution(report):
    """(interpreter id, thread state, running LWP, holds the GIL) of every thread state, and the
    findings' codes, severities and threads: what the front ends must agree on."""
    return (sorted((i["id"], ts["address"], ts["lwp"], ts["holds_gil"]) for _, i in interpreters(report) for ts in i["tstates"]),
            sorted((f["code"], f["severity"], f["lwp"] or 0) for f in report["findings"]))


def no_error(report, where, errors=None):
    """No error finding; or, with errors (a set of (code, LWP) that memory shows), exactly those."""
    found = [f for f in report["findings"] if f["severity"] == "error"]
    if errors is None:
        expect(not found, "%s: error findings %s" % (where, [f["code"] + ": " + f["message"] for f in found]), report)
    else:
        expect({(f["code"], f["lwp"]) for f in found} == set(errors),
               "%s: error findings %s, memory shows %s" % (where, sorted((f["code"], f["lwp"], f["message"]) for f in found),
                                                            sorted(errors)), report)
    for f in report["findings"]:
        expect("sources" in f, "%s: finding %s lists no sources" % (where, f["code"]), report)


def check_report(report, facts, where, gil=True, errors=None, nested=False):
    """facts: the recorded calls (function, native_id, interp); spin_* calls are the busy ones.
    gil: whether the busy call must be seen holding the GIL (a snapshot while it runs Python).
    errors: the error findings memory shows, as no_error's; None: no error finding.
    nested: each call is the innermost of callbacks nested on its thread (running())."""
    runs = running(report, where, {f["native_id"]: f["function"] for f in facts} if nested else None)
    lwps = {t["lwp"] for t in report["threads"]}
    for fact in facts:
        lwp = fact["native_id"]
        who = "%s: %s on LWP %d (interpreter %d)" % (where, fact["function"], lwp, fact["interp"])
        expect(lwp in lwps, who + ": the thread is listed", report)
        expect(lwp in runs, who + ": no thread state runs on it", report)
        interp, ts = runs[lwp]
        functions = [f["function"] for f in ts["frames"]]
        expect(interp["id"] == fact["interp"], who + ": runs %s of interpreter %d" % (ts["address"], interp["id"]), report)
        expect(fact["function"] in functions, who + ": its thread state %s has frames %s" % (ts["address"], functions), report)
        busy = fact["function"].startswith("spin")
        innermost = fact.get("innermost", "spin" if busy else "wait_for_release")
        expect(functions[0] == innermost, who + ": innermost frame %s, expected %s" % (functions[0], innermost), report)
        if (busy or fact.get("gil")) and gil:
            expect(ts["holds_gil"] and interp["gil_holder"] == ts["address"], who + ": holds the GIL", report)
            expect(next(t for t in report["threads"] if t["lwp"] == lwp)["current_tstate"] == ts["address"],
                   who + ": CPython's current thread state", report)
    with_frames = {lwp for lwp, (_, ts) in runs.items() if ts["frames"]}
    expect(with_frames == {f["native_id"] for f in facts},
           "%s: threads running Python %s, recorded calls on %s" % (where, sorted(with_frames), sorted(f["native_id"] for f in facts)), report)
    holders = sorted(ts["address"] for _, i in interpreters(report) for ts in i["tstates"] if ts["holds_gil"])
    want = sorted(runs[f["native_id"]][1]["address"] for f in facts if f["function"].startswith("spin") or f.get("gil"))
    if gil and want:
        expect(holders == want, "%s: GIL held by %s, expected %s" % (where, holders, want), report)
    no_error(report, where, errors)
    return runs


def check_native(native, full, where, nested=None):
    """--native: each thread's eval-loop frames carry the Python frames of the thread state that
    runs on it, and no other's. nested: {LWP: interpreter ids, innermost first} of a thread where
    callbacks nest, each in its own interpreter: its eval loops carry the frames of each state on
    it in that order."""
    if nested:
        full = json.loads(json.dumps(full))
        for lwp, order in nested.items():
            mine = {i["id"]: ts for _, i in interpreters(full) for ts in i["tstates"] if ts["lwp"] == lwp and ts["frames"]}
            frames = [f for interp in order for f in mine[interp]["frames"]]
            for ts in mine.values():
                ts["lwp"] = None
            mine[order[0]].update(lwp=lwp, frames=frames)
    problems = native_check.check_python_merge(native, full)
    expect(not problems, "%s --native: %s" % (where, problems))


def check_gdb_walk(exe, core, report, where):
    """gdb's own reading of the same core through DWARF (tests/lib/gdb_oracle.py, one gdb run):
    every interpreter's thread states (each with the same innermost function) and GIL, every
    thread's current and PyGILState states and the states its eval loops run."""
    import gdb_oracle
    gdb_oracle.check(exe, core, report, where, expect=lambda cond, what: expect(cond, what, report))


def gdb_gil(exe, core, where):
    """What gdb reads of the main interpreter's GIL and of PyGILState's slots in the core, through
    the shared oracle (tests/lib/gdb_oracle.py): locked, last_holder, current (<= 3.11 the
    process-wide gilstate.tstate_current; 3.12+ {lwp: _Py_tss_tstate}), slots {lwp: the thread's
    PyGILState slot, None when empty}, autotss_key."""
    import gdb_oracle
    said = gdb_oracle.read(exe, core)
    expect(said["runtimes"], "%s: gdb read no CPython runtime" % where)
    rt = said["runtimes"][0]
    main = min(rt["interpreters"], key=lambda i: i["id"])
    gil = main["gil"]
    expect("unreadable" not in gil, "%s: gdb could not read the GIL: %s" % (where, gil))
    mem = {"locked": int(gil["locked"]), "last_holder": gil["last_holder"], "autotss_key": rt["autotss_key"]}
    if "tstate_current" in rt:
        mem["current"] = rt["tstate_current"] or "0x0"
    else:
        mem["current"] = {str(t["lwp"]): (t.get("current") or [None])[0] for t in said["threads"]}
    mem["slots"] = {str(t["lwp"]): (t.get("autotss") or [None])[0] for t in said["threads"]}
    for what, values in (("current", mem["current"] if isinstance(mem["current"], dict) else {}), ("slots", mem["slots"])):
        bad = {lwp: v for lwp, v in values.items() if isinstance(v, dict)}
        expect(not bad, "%s: gdb could not read %s: %s" % (where, what, bad))
    return mem


def check_waiters(report, waiters, holder, where, named=True):
    """Each of `waiters` (LWPs) waits for the GIL that LWP `holder` holds, as the report says.
    named: the report names the wait (take_gil is a static function: --no-dwarf, without the
    debug file's symbols, may call it none; a wait it does call the GIL's must name the holder)."""
    threads = {t["lwp"]: t for t in report["threads"]}
    for lwp in waiters:
        blocked = threads[lwp].get("blocked_on") or {}
        if not named and blocked.get("kind") != "gil":
            continue
        expect(blocked.get("kind") == "gil" and blocked.get("held_by") == holder,
               "%s: LWP %d waits for the GIL held by LWP %d; the report: %s" % (where, lwp, holder, blocked), report)


def gdb_current(mem, lwp):
    """The state gdb read as current for LWP: CPython's process-wide tstate_current (<= 3.11, the
    GIL holder's), or that thread's _Py_tss_tstate (3.12+)."""
    return mem["current"].get(str(lwp)) if isinstance(mem["current"], dict) else mem["current"]


def version(report):
    """The (major, minor) of the report's first CPython."""
    return tuple(int(x) for x in report["runtimes"][0]["version"].split(".")[:2])
