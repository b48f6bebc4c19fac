#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""_Py_DebugOffsets on a real kernel core of Debian's python3.15 (tests/scenarios/versions/
threads_gil.py), read with --no-dwarf so that the debug offsets carry the layout, patched at
addresses gdb gives from python3.15-dbg's DWARF (_PyRuntime.debug_offsets...):
  synthetic-3.16   the version made 3.16.0: read with the 3.15 shape and one notice naming 3.16;
                   every thread state, frame and TLS value as the scenario said
  corrupt          PyThreadState.interp's published offset made absurd: the offsets are refused
                   with the reason, and 3.15's own table reads the core all the same
  corrupt-3.16     both: no table fits and the offsets are refused: exit 2, one line with the reason
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "findings"))
import scenario  # noqa: E402
import versions_test  # noqa: E402
from bad_input import patch_bytes  # noqa: E402
from findings_cases import expect  # noqa: E402


def gdb_address(target, core, expression):
    debug = os.path.join(target.root, "usr", "lib", "debug")
    out = subprocess.run(["gdb", "-q", "-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex", "set debug-file-directory " + debug,
                          "-ex", "core-file " + core, "-ex", "print/x (unsigned long)" + expression, target.module],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300).stdout.decode(errors="replace")
    m = re.search(r"^\$1 = (0x[0-9a-f]+)\s*$", out, re.M)
    expect(m is not None, "gdb could not evaluate %s:\n%s" % (expression, out[-2000:]))
    return int(m.group(1), 16)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--python315-dir", required=True)
    p.add_argument("case", choices=["synthetic-3.16", "corrupt", "corrupt-3.16"])
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="pytstates-offsets-")
    try:
        target = versions_test.Target("3.15", "nodwarf", workdir, {"3.15": args.python315_dir})
        coredir = os.path.join(workdir, "core")
        os.makedirs(coredir)
        facts, core = scenario.take_core(target.argv + [versions_test.SCRIPT], target.kind, workdir=coredir, env=target.env)
        cmd = ["tstates", "--core", core, "--json", "--frames", "3"] + target.extra
        if args.case in ("synthetic-3.16", "corrupt-3.16"):
            version = gdb_address(target, core, "&_PyRuntime.debug_offsets.version")
            patch_bytes(core, version, struct.pack("<Q", 0x031000F0))  # 3.16.0 final
        if args.case in ("corrupt", "corrupt-3.16"):
            field = gdb_address(target, core, "&_PyRuntime.debug_offsets.thread_state.interp")
            patch_bytes(core, field, struct.pack("<Q", 1 << 40))
        status, report, err = scenario.run_pytstates(args.pytstates, cmd)
        if args.case == "corrupt-3.16":
            lines = err.strip().splitlines()
            expect(status == 2 and len(lines) == 1 and "3.16" in lines[0] and "no built-in table" in lines[0]
                   and "outside its struct" in lines[0], "exit 2, one line naming 3.16 and the reason: %r" % err)
            print(lines[0])
            return 0
        expect(status == scenario.quiet_status(target.kind), "pytstates exited %d: %s" % (status, err))
        rt = report["runtimes"][0]
        notes = rt.get("notes", [])
        if args.case == "synthetic-3.16":
            expect(rt["version"] == "3.16.0" and rt["layout"] == "debug_offsets", "read as 3.16.0 from the debug offsets", report)
            expect(len(notes) == 1 and "3.16 is newer than any this pytstates was tested with (3.15)" in notes[0],
                   "one notice naming 3.16: %r" % notes)
            sources = set(rt["layout_sources"].values())
            expect(sources <= {"debug_offsets", "table"} and rt["layout_sources"]["PyThreadState.interp"] == "debug_offsets",
                   "fields from the debug offsets (PyDictKeysObject's fixed layout aside)", report)
            target.version = None
            target.series = "3.16"
            facts["version"] = "3.16.0"
        else:
            expect(rt["layout"] == "table" and any("_Py_DebugOffsets not used" in n and "PyThreadState.interp" in n and "outside its struct" in n
                                                   for n in notes), "the debug offsets refused with the reason: %r" % notes)
        c = versions_test.Checker()
        target.layout = rt["layout"]
        versions_test.check(target, facts, report, None, c)
        c.failures = [f for f in c.failures if "notes has no layout disagreement" not in f]
        expect(not c.failures, "\n".join(c.failures))
        print("notes: %s" % notes)
        print("PASS %s: %d thread states, frames and TLS as the scenario said" % (args.case, len(facts["threads"])))
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
