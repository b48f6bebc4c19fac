#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`pytstates check` on real cores of the findings scenarios (gcore while paused, the kernel's
core on SIGABRT, or the kernel's core of the real crash), held against what each scenario printed."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import findings_cases  # noqa: E402
import gdb_oracle  # noqa: E402
import native_check  # noqa: E402
import scenario  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True, help="directory of the built scenario programs")
    p.add_argument("--kind", default="gcore", choices=["gcore", "kernel", "crash"])
    p.add_argument("case")
    args = p.parse_args()
    facts, core = scenario.take_core(findings_cases.argv(args.scenarios, args.case, args.kind == "crash"), args.kind,
                                     after_ready=findings_cases.after_ready(args.case, args.kind))
    try:
        reports = {}

        def check(extra):
            status, out, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core] + extra)
            if extra == ["--json"]:
                reports["json"] = out
            return status, out
        def internals(extra):
            status, out, _ = scenario.run_pytstates(args.pytstates, ["internals", "--core", core] + extra)
            return status, out
        findings_cases.with_internals(internals)
        findings_cases.check_case(args.case, facts, check, args.kind)
        # gdb's own reading of the same core (one gdb run): the thread states, the GIL, every
        # thread's current and PyGILState states and eval loops; then every thread's native
        # stack, innermost five frames, as gdb's backtrace.
        argv = findings_cases.argv(args.scenarios, args.case, args.kind == "crash")
        report = reports.get("json") or check(["--json"])[1]
        said = gdb_oracle.check(argv[0], core, report, "%s %s core" % (args.case, args.kind))
        _, native = check(["--native", "--json"])
        problems = native_check.compare_with_gdb(native, native_check.parse_backtraces(said["backtraces"]))
        findings_cases.expect(not problems, "native frames differ from gdb's:\n  " + "\n  ".join(problems))
    finally:
        scenario.cleanup(core)
    print("PASS %s (%s core)" % (args.case, args.kind))


if __name__ == "__main__":
    main()
