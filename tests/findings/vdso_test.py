#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Frames in the vDSO are named from its image (AT_SYSINFO_EHDR), in a gcore core as gdb names
them, and live: a Python loop calling time.monotonic() (clock_gettime in the vDSO) is caught
inside it by taking cores (or attaching) until its innermost frame is there. On that core, gdb's
py-tstates and lldb's name it the same way (the vDSO's address from gdb's auxv, lldb's module list)."""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402
from debugger_batch import core_json  # noqa: E402

LOOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "findings", "vdso_loop.py")
PYTHON = scenario.PYTHON  # the suite's own Python (3.11 on Debian 12, 3.13 on 13)
TRIES = 60  # the loop is in the vDSO about a third of the time: 60 misses in a row do not happen


def innermost(r, lwp):
    rows = [t for t in r["threads"] if t["lwp"] == lwp]
    expect(rows and rows[0]["native_frames"], "the looping thread has native frames", r)
    return rows[0]["native_frames"]


def gdb_frames(core):
    out = subprocess.run(["gdb", "-q", "-batch", "-nx", "-ex", "bt 2", PYTHON, core], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=120).stdout.decode(errors="replace")
    # gdb prints the core's stop line (#0) before bt's own #0, #1: keep bt's, by frame number.
    frames = {}
    for line in out.splitlines():
        if line.startswith("#"):
            words = line.split()
            frames[int(words[0][1:])] = words[3] if words[2] == "in" else words[1]
    return [frames[n] for n in sorted(frames)]


VDSO_NAMES = ("clock_gettime", "__vdso_clock_gettime")


def named_in_vdso(frames):
    """The vDSO's exported clock_gettime among its frames. A kernel may run the call in a static
    function of its own (6.18's vDSO: an unexported helper below clock_gettime, in no symbol table,
    unnamed by gdb too): the frame under it is named."""
    vdso = [f for f in frames if f["module"] == "[vdso]"]
    return any(f["function"] in VDSO_NAMES for f in vdso) and all(f["function"] in VDSO_NAMES or f["function"] is None for f in vdso)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script")
    p.add_argument("--lldb-plugin")
    p.add_argument("kind", choices=["gcore", "live"])
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="pytstates-vdso-")
    try:
        with scenario.running([PYTHON, LOOP], workdir) as (proc, facts):
            for _ in range(TRIES):
                if args.kind == "live":
                    _, r, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", str(facts["pid"]), "--native", "--json"])
                    frames = innermost(r, facts["lwp"])
                    if frames[0]["module"] != "[vdso]":
                        continue
                    expect(named_in_vdso(frames[:3]), "the vDSO frame is named", frames[:3])
                    expect(any(f["module"].endswith("libc.so.6") for f in frames[1:4]), "unwound through the vDSO into libc", frames[:4])
                    break
                core = scenario.gcore(facts["pid"], os.path.join(workdir, "core"))
                _, r, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--native", "--json"])
                frames = innermost(r, facts["lwp"])
                if frames[0]["module"] != "[vdso]":
                    os.unlink(core)
                    continue
                theirs = gdb_frames(core)
                in_vdso = [f for f in frames if not f.get("inlined")]
                in_vdso = in_vdso[:next((i for i, f in enumerate(in_vdso) if f["module"] != "[vdso]"), len(in_vdso))]
                ours = [f["function"] or "??" for f in in_vdso]
                expect(ours and theirs[:len(ours)] == ours and named_in_vdso(frames[:3]),
                       "the vDSO frames named as gdb names them: ours %s, gdb %s" % (ours, theirs), frames[:3])
                caller = next((f for f in frames if f["module"] != "[vdso]"), None)
                expect(caller and caller["function"] and caller["module"].endswith("libc.so.6"), "unwound through the vDSO into libc", frames[:4])
                for debugger, loads in (("gdb", args.gdb_script), ("lldb", args.lldb_plugin)):
                    if not loads:
                        continue
                    theirs = innermost(core_json(debugger, loads, PYTHON, core, "py-tstates --native --json"), facts["lwp"])
                    expect([(f["module"], f["function"]) for f in theirs[:2]] == [(f["module"], f["function"]) for f in frames[:2]],
                           "%s names the vDSO frame and its caller as the CLI does" % debugger, theirs[:3])
                break
            else:
                expect(False, "the loop was never caught in the vDSO in %d tries" % TRIES)
    finally:
        scenario.cleanup(workdir)
    print("PASS vdso %s" % args.kind)


if __name__ == "__main__":
    main()
