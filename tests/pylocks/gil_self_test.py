#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A live self-wait on the GIL (gil_self.py: PyEval_RestoreThread with a second thread state while
the GIL is held): `pytstates check --pid` (and on its gcore, with gdb's reading as the second oracle)
finds one deadlock of one thread that waits for the GIL it holds, names the holding thread state,
and lists the second one; the process survives the look."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import gdb_oracle  # noqa: E402
import scenario  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def check(pytstates, facts, extra, where):
    status, report, err = scenario.run_pytstates(pytstates, ["check", "--json"] + extra)
    expect(status == 1, "%s: check exited %d (%s)" % (where, status, err.strip()))
    lwp, held, second = facts["lwp"], int(facts["held"], 16), int(facts["second"], 16)
    dl = [f for f in report["findings"] if f["code"] == "deadlock"]
    expect(len(dl) == 1, "%s: one deadlock expected: %s" % (where, [f["message"] for f in report["findings"]]))
    steps = [(s["lwp"], s["waits_for"], s["held_by"]) for s in dl[0]["cycle"]]
    expect(steps == [(lwp, "gil", lwp)], "%s: cycle %s, expected LWP %d waiting for the GIL it holds" % (where, steps, lwp))
    expect(dl[0]["message"].startswith("1 thread waits for itself") and ("with thread state %#x" % held) in dl[0]["message"],
           "%s: %s" % (where, dl[0]["message"]))
    interp = report["runtimes"][0]["interpreters"][0]
    expect(int(interp["gil_holder"], 16) == held, "%s: GIL holder %s, the program says %#x" % (where, interp["gil_holder"], held))
    listed = {int(t["address"], 16): t for t in interp["tstates"]}
    expect(held in listed and second in listed, "%s: thread states %s lack %#x or %#x" % (where, sorted(map(hex, listed)), held, second))
    row = [t for t in report["threads"] if t["lwp"] == lwp][0]
    expect(row["blocked_on"]["kind"] == "gil" and row["blocked_on"]["held_by"] == lwp, "%s: blocked_on %s" % (where, row["blocked_on"]))
    print("%s: LWP %d waits for the GIL held by itself with %#x; second thread state %#x listed" % (where, lwp, held, second))
    return report


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--kind", choices=["gcore", "live"], default="live")
    args = p.parse_args()
    argv = [scenario.PYTHON, os.path.join(HERE, "gil_self.py")]
    where = "gil-self %s %s" % (args.kind, os.path.basename(scenario.PYTHON))
    if args.kind == "live":
        with scenario.running(argv) as (proc, facts):
            time.sleep(0.5)  # READY comes just before the call that blocks
            check(args.pytstates, facts, ["--pid", str(proc.pid)], where)
            expect(proc.poll() is None, "%s: the process did not survive pytstates" % where)
    else:
        facts, core = scenario.take_core(argv, after_ready=lambda proc, facts: time.sleep(0.5))
        try:
            report = check(args.pytstates, facts, ["--core", core, "--exe", scenario.PYTHON], where)
            gdb_oracle.check(scenario.PYTHON, core, report, where)
        finally:
            scenario.cleanup(core)
    print("%s: passed" % where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
