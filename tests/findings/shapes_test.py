#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Thread-state shapes embedders make, each on a gcore core, held against what the program printed
about itself and against gdb's own reading of the same core (tests/lib/gdb_oracle.py):

  swap-hold  a swap without release, the seed's svr 2.0 coroutine (swap_hold_host.c): the worker
             holds the GIL, its PyGILState state W, and runs a coroutine's state D2 swapped in with
             PyThreadState_Swap. gil_holder is D2; gil_taken_by W where the swap kept the GIL
             (<= 3.11: 3.12+ releases it and takes it again for D2); tls-mismatch on the worker up to 3.11 (current D2, PyGILState W, while it
             holds the GIL); none from 3.12, whose swap binds PyGILState's slot to D2 too.
  nested     nested sub-interpreter calls on one stack (nested_host.c): the main thread runs the
             sub-interpreter's state B innermost and the main interpreter's A beneath it, holding
             the GIL; a second thread waits for it.
  pool       a pool of thread states handed between threads (pool_host.c, mod_python's pattern):
             one state has run on two threads and parks on the second, another spins holding the
             GIL on the first, the third was never run.

python: "debian" (built by CMake against the suite's Python), a pyenv version ("3.8.18"), or
"3.13t" (scripts/python-freethreaded's build), compiled here as swap_test.py compiles swap_host."""
import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, HERE)
import gdb_oracle  # noqa: E402
import scenario  # noqa: E402
import swap_test  # noqa: E402
from findings_cases import expect, findings  # noqa: E402

SOURCES = os.path.join(TOP, "tests", "scenarios", "findings")


def norm(address):
    return hex(int(address, 16))


def where(report):
    """{tstate address: (interpreter, tstate)}."""
    return {t["address"]: (i, t) for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"]}


def thread(report, lwp):
    rows = [t for t in report["threads"] if t["lwp"] == lwp]
    expect(len(rows) == 1, "LWP %d is listed once" % lwp, report)
    return rows[0]


def gdb_thread(said, lwp):
    rows = [t for t in said["threads"] if t["lwp"] == lwp]
    expect(len(rows) == 1, "gdb lists LWP %d once: %s" % (lwp, [t["lwp"] for t in said["threads"]]))
    return rows[0]


def gdb_runs(said, lwp):
    """The states gdb reads the thread's eval loops run, innermost first (each once)."""
    out = []
    for loop in gdb_thread(said, lwp)["eval"]:
        expect("tstate" in loop, "gdb reads the state of LWP %d's eval loop at frame #%d: %s" % (lwp, loop["level"], loop.get("unreadable")))
        if loop["tstate"] not in out:
            out.append(loop["tstate"])
    return out


def gdb_current(said, lwp, running):
    """What gdb reads as CPython's current state on the thread: _Py_tss_tstate (3.12+), or
    gilstate.tstate_current (<= 3.11) when that is the state the thread's eval loop runs."""
    row = gdb_thread(said, lwp)
    if "current" in row:
        return gdb_oracle.one_value(row["current"])
    tc = said["runtimes"][0].get("tstate_current")
    return tc if tc == running else None


def the_gil(said, interp_address):
    gi = [i for r in said["runtimes"] for i in r["interpreters"] if i["address"] == interp_address]
    expect(len(gi) == 1 and not gdb_oracle.unreadable(gi[0]["gil"]), "gdb reads the GIL of interpreter %s: %s" % (interp_address, gi))
    return gi[0]["gil"]


def check_swap_hold(facts, r, said, build, label):
    w, d2, lwp = norm(facts["w"]), norm(facts["d2"]), facts["worker_lwp"]
    expect(facts["python_lwp"] == lwp and norm(facts["running"]) == d2, label + ": the coroutine runs D2 on the worker (its own words)", facts)
    # gdb's reading: the truth the program set up.
    expect(gdb_runs(said, lwp) == [d2], label + ": gdb: the worker's eval loop runs D2")
    expect(gdb_current(said, lwp, d2) == d2, label + ": gdb: CPython's current state on the worker is D2")
    # PyGILState's slot: W up to 3.11; 3.12+ binds it to the state a swap activates (the program's words).
    gilstate = norm(facts["gilstate"])
    expect(gilstate == (w if build.minor_version <= 11 else d2), label + ": PyGILState's slot is %s (the program's words)"
           % ("W" if build.minor_version <= 11 else "D2"), facts)
    expect(gdb_oracle.one_value(gdb_thread(said, lwp)["autotss"]) == gilstate, label + ": gdb: PyGILState's slot on the worker")
    ts = where(r)
    interp, t = ts[d2]
    gil = the_gil(said, interp["address"])
    # Up to 3.11 PyThreadState_Swap keeps the GIL; 3.12+ releases it and takes it again for the
    # new state (_PyEval_ReleaseLock, _PyEval_AcquireLock: per-interpreter GILs).
    kept = build.minor_version <= 11
    if build.free_threaded:
        expect(gil.get("enabled") is False, label + ": gdb: no GIL (free-threaded)", gil)
    else:
        expect(gil["locked"] and gil["last_holder"] == (w if kept else d2),
               label + ": gdb: the GIL locked, last_holder %s" % ("W (the swap kept it)" if kept else "D2 (the swap took it again)"), gil)
    # pytstates
    expect(t["lwp"] == lwp and t["frames"] and t["frames"][0]["function"] == facts["function"],
           label + ": D2 runs on the worker, in coroutine_body", t)
    row = thread(r, lwp)
    expect(row["current_tstate"] == d2 and row["autotss_tstate"] == gilstate, label + ": the worker's current state D2, PyGILState's %s" % gilstate, row)
    if build.free_threaded:
        expect(interp["gil"] == "disabled" and interp["gil_holder"] is None, label + ": no GIL", interp)
        expect(t.get("state") == "attached" and ts[w][1].get("state") == "detached", label + ": D2 attached, W detached", [t, ts[w][1]])
    else:
        expect(interp["gil_holder"] == d2 and t["holds_gil"], label + ": D2 holds the GIL", interp)
        expect(interp.get("gil_taken_by") == (w if kept else None),
               label + ": gil_taken_by %s" % ("W: the swap kept the GIL W took" if kept else "absent: D2 took the GIL itself"), interp)
    hits = [f for f in findings(r, "tls-mismatch", "error") if f["lwp"] == lwp]
    if gilstate == w:  # two live TLS sources, two states, while the worker holds the GIL (is attached)
        expect(len(hits) == 1 and d2 in hits[0]["message"] and w in hits[0]["message"],
               label + ": one tls-mismatch on the worker naming D2 and W", r["findings"])
    else:
        expect(not hits, label + ": no tls-mismatch: CPython's current state and PyGILState's slot are both D2", hits)


def check_nested(facts, r, said, build, label):
    a, b, lwp = norm(facts["a"]), norm(facts["b"]), facts["main_lwp"]
    expect(facts["python_lwp"] == lwp and norm(facts["running"]) == b, label + ": inner_call runs B on the main thread (its own words)", facts)
    expect(gdb_runs(said, lwp) == [b, a], label + ": gdb: the main thread's eval loops run B, then A beneath it")
    expect(gdb_current(said, lwp, b) == b, label + ": gdb: CPython's current state on the main thread is B")
    ts = where(r)
    (ia, ta), (ib, tb) = ts[a], ts[b]
    kept = build.minor_version <= 11  # as in check_swap_hold
    gil = the_gil(said, ia["address"])
    expect(gil["locked"] and gil["last_holder"] == (a if kept else b), label + ": gdb: the GIL locked, last_holder %s" % ("A" if kept else "B"), gil)
    expect(ib["id"] == facts["b_interp_id"] and ia["id"] == 0, label + ": B in the sub-interpreter, A in the main one", [ia["id"], ib["id"]])
    expect(ta["lwp"] == lwp and tb["lwp"] == lwp, label + ": A and B run on the main thread", [ta, tb])
    expect(tb["frames"] and tb["frames"][0]["function"] == facts["inner"], label + ": B's innermost frame inner_call", tb)
    expect(ta["frames"] and ta["frames"][0]["function"] == facts["outer"], label + ": A's innermost frame outer_call", ta)
    row = thread(r, lwp)
    expect(row["tstates"] == [b, a], label + ": the main thread runs B, then A", row)
    expect(row["current_tstate"] == b, label + ": the main thread's current state is B", row)
    gilstate = norm(facts["gilstate"])
    expect(gdb_oracle.one_value(gdb_thread(said, lwp)["autotss"]) == gilstate == row["autotss_tstate"],
           label + ": PyGILState's slot on the main thread: the program, gdb and pytstates say %s" % gilstate, row)
    for i in (ia, ib):
        expect(i["gil_holder"] == b, label + ": interpreter %d: B holds the GIL" % i["id"], i)
        expect(i.get("gil_taken_by") == (a if kept else None), label + ": interpreter %d: gil_taken_by %s" % (i["id"], "A" if kept else "absent"), i)
    waiter = thread(r, facts["waiter_lwp"]).get("blocked_on") or {}
    expect(waiter.get("kind") == "gil" and waiter.get("held_by") == lwp, label + ": the waiter waits for the GIL the main thread holds", waiter)
    wrong = [f for f in r["findings"] if f["code"] in ("stale-tstate", "shared-tstate", "foreign-tstate", "orphan-tstate", "invalid-gil-holder", "deadlock")]
    expect(not wrong, label + ": no finding of a stale, shared, foreign or orphan state, nor a deadlock", wrong)


def check_pool(facts, r, said, build, label):
    pool = [norm(p) for p in facts["pool"]]
    parked, busy, first = facts["parked"], facts["busy"], facts["first"]
    expect(norm(first["tstate"]) == pool[0] and norm(parked["tstate"]) == pool[0] and norm(busy["tstate"]) == pool[1],
           label + ": state 0 ran first and parks, state 1 spins (the program's words)", facts)
    expect(first["lwp"] == busy["lwp"] != parked["lwp"] and all(x["python_lwp"] == x["lwp"] for x in (first, parked, busy)),
           label + ": state 0 ran on worker 1, then on worker 2 (Python and C agree)", facts)
    expect(gdb_runs(said, parked["lwp"]) == [pool[0]], label + ": gdb: worker 2's eval loop runs state 0")
    expect(gdb_runs(said, busy["lwp"]) == [pool[1]], label + ": gdb: worker 1's eval loop runs state 1")
    ts = where(r)
    interp = ts[pool[0]][0]
    if build.free_threaded:
        expect(the_gil(said, interp["address"]).get("enabled") is False, label + ": gdb: no GIL (free-threaded)")
    else:
        gil = the_gil(said, interp["address"])
        expect(gil["locked"] and gil["last_holder"] == pool[1], label + ": gdb: the GIL locked by state 1", gil)
        expect(gdb_current(said, busy["lwp"], pool[1]) == pool[1], label + ": gdb: CPython's current state on worker 1 is state 1")
    for state, fact in ((pool[0], parked), (pool[1], busy)):
        t = ts[state][1]
        expect(t["lwp"] == fact["lwp"] and t["frames"] and t["frames"][0]["function"] == fact["function"],
               label + ": %s runs on LWP %d in %s" % (state, fact["lwp"], fact["function"]), t)
        expect(t.get("made_by_lwp") == facts["main_lwp"], label + ": %s made by the main thread" % state, t)
        if not build.free_threaded:
            expect(t["holds_gil"] == (state == pool[1]), label + ": %s %s the GIL" % (state, "holds" if state == pool[1] else "does not hold"), t)
    spare = ts[pool[2]][1]
    expect(spare["lwp"] is None and spare["parked"] and spare.get("made_by_lwp") == facts["main_lwp"],
           label + ": state 2 never ran: parked, made by the main thread", spare)
    if not build.free_threaded:
        expect(interp["gil_holder"] == pool[1] and interp.get("gil_taken_by") is None, label + ": state 1 holds the GIL it took", interp)
    errors = [f for f in r["findings"] if f["severity"] == "error"]
    expect(not errors, label + ": no error finding", errors)


CHECKS = {"swap-hold": check_swap_hold, "nested": check_nested, "pool": check_pool}


def build_for(shape, python, scenarios, workdir):
    name = shape.replace("-", "_") + "_host"
    source = os.path.join(SOURCES, name + ".c")
    if python == "debian":
        build = swap_test.Build(os.path.join(scenarios, "scenario_" + name)).minor("%d.%d" % sys.version_info[:2])
    elif python.endswith("t"):
        build = swap_test.build_for_freethreaded(python[:-1], workdir, source)
    else:
        build = swap_test.build_for_pyenv(python, workdir, source)
    return build


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("shape", choices=sorted(CHECKS))
    p.add_argument("python", help="debian | a pyenv version | 3.13t")
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="pytstates-shapes-")
    try:
        build = build_for(args.shape, args.python, args.scenarios, workdir)
        series = "%d.%d" % sys.version_info[:2] if args.python == "debian" else ".".join(args.python.rstrip("t").split(".")[:2])
        build.minor_version = int(series.split(".")[1])
        facts, core = scenario.take_core([build.exe], "gcore", env=build.env)
        label = "%s %s" % (args.shape, args.python)
        try:
            status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
            expect(status in (0, 1), "%s: pytstates exit status %d: %s" % (label, status, err))
            _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core])
            print(text)
            said = gdb_oracle.read(build.exe, core)
            oracle = gdb_oracle.compare(said, r, label)
            gdb_oracle.summarize(oracle, said, label)
            CHECKS[args.shape](facts, r, said, build, label)
            expect(not oracle.problems, "%s: pytstates and gdb's own reading differ:\n  %s" % (label, "\n  ".join(oracle.problems)))
        finally:
            scenario.cleanup(core)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("PASS %s %s" % (args.shape, args.python))


if __name__ == "__main__":
    main()
