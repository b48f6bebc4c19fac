#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The CRASH section names the Python functions the crashing thread runs, without --native: a
thread of Debian's python3 dies of SIGSEGV in ctypes.string_at(0) called from `crasher` (recursed
twice), and the kernel's core is read. Held against what the program said (its LWP, the line of the
call) and against gdb's py-bt (python3-dbg's gdb script) on the same core."""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_python_program.py")


def py_bt(core):
    """(function, line) of each frame gdb's py-bt shows for the core's first (crashing) thread, innermost first."""
    out = subprocess.run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex", "add-auto-load-safe-path /usr",
                          "-ex", "py-bt", scenario.PYTHON, core], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=120).stdout.decode(errors="replace")
    frames = [(m.group(2), int(m.group(1))) for m in re.finditer(r'^\s*File "[^"]*", line (\d+), in (\S+)', out, re.M)]
    return frames, out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    args = p.parse_args()
    facts, core = scenario.take_core([scenario.PYTHON, PROGRAM], "crash")
    try:
        _, r, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"], expect_status=1)
        crash = r["target"]["crash"]
        expect(crash and crash["lwp"] == facts["lwp"] and crash["signal_name"] == "SIGSEGV", "the crash: LWP %d, SIGSEGV" % facts["lwp"], r)
        merged = [(p["function"], p["line"]) for f in crash["frames"] for p in f.get("python", [])]
        # ctypes.string_at is Python (ctypes/__init__.py) calling the C function that faults.
        expect([f for f, _ in merged[:4]] == ["string_at", "crasher", "crasher", "crasher"] and merged[1][1] == facts["line"]
               and merged[2][1] == merged[3][1],
               "the eval-loop frames of the crash carry string_at, crasher at line %d, its two callers: %s" % (facts["line"], merged), r)
        theirs, said = py_bt(core)
        expect(theirs and merged == theirs[:len(merged)], "gdb's py-bt: %s; ours %s\n%s" % (theirs, merged, said[-2000:]))
        status, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core], expect_status=1)
        section = text[text.index("CRASH"):text.index("FINDINGS") if "FINDINGS" in text else text.index("No findings")]
        files = [(p["function"], p["file"]) for f in crash["frames"] for p in f.get("python", [])][:2]
        expect(files == [("string_at", facts["ctypes_file"]), ("crasher", facts["file"])],
               "the JSON's frames name the files whole, as their code objects do: %s" % files)
        # No terminal (a pipe, no --width): the files by their whole paths, as py-bt shows them.
        expect("Python: string_at (%s:" % facts["ctypes_file"] in section and "Python: crasher (%s:%d)" % (facts["file"], facts["line"]) in section,
               "the CRASH section names the Python function, its file whole and the line:\n" + section)
        print("CRASH of LWP %d: Python frames %s; gdb's py-bt %s" % (facts["lwp"], merged, theirs[:len(merged)]))
    finally:
        scenario.cleanup(core)
    print("PASS findings crash-python")


if __name__ == "__main__":
    main()
