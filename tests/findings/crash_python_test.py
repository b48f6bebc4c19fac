#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The CRASH section names the Python functions the crashing thread runs, without --native: a
thread of Debian's python3 dies of SIGSEGV in ctypes.string_at(0) called from `crasher` (recursed
twice), and the kernel's core is read. Held against what the program said (its LWP, the line of the
call) and against gdb's py-bt (python3-dbg's gdb script) on the same core; where py-bt reads no frame
(Debian 13's python3.13: "(unable to read python frame information)"), against gdb's reading of the
same core through CPython's DWARF (tests/lib/gdb_frame_stack.py: function, file and line, the line
from the code's location table as libpython.py computes it)."""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "crash_python_program.py")
FRAME_STACK = os.path.join(HERE, "..", "lib", "gdb_frame_stack.py")
GDB = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off"]


def traceback(out):
    """(function, line) of each `File "...", line N, in NAME` line, innermost first."""
    return [(m.group(2), int(m.group(1))) for m in re.finditer(r'^\s*File "[^"]*", line (\d+), in (\S+)', out, re.M)]


def py_bt(core):
    """(function, line) of each frame gdb's py-bt shows for the core's first (crashing) thread, innermost first."""
    out = subprocess.run(GDB + ["-iex", "add-auto-load-safe-path /usr", "-ex", "py-bt", scenario.PYTHON, core],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode(errors="replace")
    return traceback(out), out


def dwarf_bt(core):
    """The same through CPython's DWARF (gdb_frame_stack.py's py-dwarf-bt; no libpython.py)."""
    out = subprocess.run(GDB + ["-iex", "set auto-load python-scripts off", "-ex", "source " + FRAME_STACK,
                                "-ex", "py-dwarf-bt", scenario.PYTHON, core],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode(errors="replace")
    return traceback(out), out


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
        dwarf, dwarf_said = dwarf_bt(core)
        if theirs:
            # Where py-bt reads the frames (Debian 12's 3.11), the DWARF reading must agree with it,
            # so that where py-bt cannot, the DWARF reading stands for it.
            reading = "gdb's py-bt"
            expect(dwarf == theirs, "gdb's reading through CPython's DWARF %s agrees with its py-bt %s\n%s"
                   % (dwarf, theirs, dwarf_said[-2000:]))
        else:
            why = sorted({line.strip() for line in said.splitlines() if "python frame" in line})
            reading = "gdb's reading through CPython's DWARF (py-bt read no frame: %s)" % " / ".join(why)
            theirs, said = dwarf, said + dwarf_said
        expect(theirs and merged == theirs[:len(merged)], "%s: %s; ours %s\n%s" % (reading, theirs, merged, said[-2000:]))
        status, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core], expect_status=1)
        section = text[text.index("CRASH"):text.index("FINDINGS") if "FINDINGS" in text else text.index("No findings")]
        files = [(p["function"], p["file"]) for f in crash["frames"] for p in f.get("python", [])][:2]
        expect(files == [("string_at", facts["ctypes_file"]), ("crasher", facts["file"])],
               "the JSON's frames name the files whole, as their code objects do: %s" % files)
        # No terminal (a pipe, no --width): the files by their whole paths, as py-bt shows them.
        expect("Python: string_at (%s:" % facts["ctypes_file"] in section and "Python: crasher (%s:%d)" % (facts["file"], facts["line"]) in section,
               "the CRASH section names the Python function, its file whole and the line:\n" + section)
        print("CRASH of LWP %d: Python frames %s; %s %s" % (facts["lwp"], merged, reading, theirs[:len(merged)]))
    finally:
        scenario.cleanup(core)
    print("PASS findings crash-python")


if __name__ == "__main__":
    main()
