#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pytstates tstates|check --locals (CLI) on cores and live processes of objects_program.py.

Usage: locals_test.py --pytstates BIN [--python314-dir D] [--python315-dir D] KIND INTERPRETER
  KIND: core (gcore), live (--pid); INTERPRETER as objects_test.py's.
Truth: the program's own account of waiter's locals (repr() of each value, type and id() of the
others) and, for debian cores, gdb's py-locals (or, where that cannot read the frame, gdb's
Python API through CPython's DWARF: locals_facts.gdb_waiter_locals). Exit 0 when all agree, 1
otherwise, 77 (not a pass) when the interpreter is missing.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import json_contract  # noqa: E402
import locals_facts  # noqa: E402
import scenario  # noqa: E402
from objects_test import Missing, interpreter  # noqa: E402


def run(argv):
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pytstates", required=True)
    ap.add_argument("--python314-dir", default="")
    ap.add_argument("--python315-dir", default="")
    ap.add_argument("kind", choices=["core", "live"])
    ap.add_argument("interpreter")
    args = ap.parse_args()
    try:
        argv, env = interpreter(args.interpreter, args)
    except Missing as e:
        print("NOT RUN (not a pass): %s" % e)
        return 77
    work = tempfile.mkdtemp(prefix="pytstates-locals-")
    try:
        return check(args, argv, env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check(args, argv, env, work):
    proc = subprocess.Popen(argv + [locals_facts.PROGRAM], stdout=subprocess.PIPE, env=env, start_new_session=True)
    problems = []
    try:
        facts = scenario.read_facts(proc, time.monotonic() + 60, who="objects_program.py")
        if args.kind == "core":
            target = ["--core", scenario.gcore(proc.pid, os.path.join(work, "core"))]
        else:
            target = ["--pid", str(proc.pid)]
        started = time.monotonic()
        outputs = {}
        for command in ("tstates", "check"):
            for form in ("json", "text"):
                status, out, err = run([args.pytstates, command] + target + ["--locals", "--frames", "4"] +
                                       (["--json"] if form == "json" else []))
                outputs[command, form] = out
                if status not in (0, 1):
                    problems.append("%s %s exited %d: %s" % (command, form, status, err.strip()))
        took = time.monotonic() - started
        if args.kind == "live" and proc.poll() is not None:
            problems.append("the program died under --pid")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for command in ("tstates", "check"):
        try:
            report = json_contract.loads(outputs[command, "json"], "pytstates %s --locals --json" % command)
        except ValueError:
            problems.append("%s --json is no JSON: %r" % (command, outputs[command, "json"][:500]))
            continue
        problems += ["%s --json: %s" % (command, p) for p in locals_facts.json_problems(report, facts)]
        problems += ["%s text: %s" % (command, p) for p in locals_facts.text_problems(outputs[command, "text"], facts)]
    compared = ""
    if args.interpreter == "debian" and args.kind == "core":
        said, reading, text = locals_facts.gdb_waiter_locals(target[1], scenario.PYTHON)
        gdb_said = locals_facts.gdb_problems(json_contract.loads(outputs["tstates", "json"]), said, reading)
        problems += gdb_said + (["what gdb printed: " + text[-1500:]] if gdb_said else [])
        compared = ", %s: %d locals" % (reading, len(said))
    print("%s %s: waiter's %d locals checked in tstates and check, JSON and text (4 runs in %.1f s)%s" % (
        args.interpreter, args.kind, len(facts["waiter_locals"]), took, compared))
    for p in problems:
        print("DIFFERS: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
