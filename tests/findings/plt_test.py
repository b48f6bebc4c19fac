#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A thread stopped in a PLT stub is unwound through it, as gdb unwinds it: the suite's Python
loops on time.monotonic() (clock_gettime, called through the executable's PLT); gdb attaches,
stops the loop at the first instruction of clock_gettime@plt, writes a core and prints its
backtrace. pytstates must unwind that thread from the stub into its callers (gdb's frames #1 and
#2, by name), reach the eval loop that runs the Python loop, and put the thread state on it."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

LOOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "findings", "vdso_loop.py")
PYTHON = scenario.PYTHON  # the suite's own Python (3.11 on Debian 12, 3.13 on 13)


# gdb's frames, each physical one (no inlined call, no tail call rebuilt) with its pc and function name.
FRAMES = ("python\n"
          "f = gdb.newest_frame()\n"
          "for _ in range(3):\n"
          "    while f is not None and f.type() in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME): f = f.older()\n"
          "    if f is None: break\n"
          "    print('FRAME %#x %s' % (f.pc(), f.name()))\n"
          "    f = f.older()\n"
          "end")


def stop_in_plt(pid, core, workdir):
    """gdb stops the process in clock_gettime@plt, writes the core; returns (LWP, frames as (pc, name))."""
    script = os.path.join(workdir, "frames.gdb")
    with open(script, "w") as f:
        f.write(FRAMES + "\n")
    out = subprocess.run(["gdb", "-q", "-batch", "-nx", "-p", str(pid), "-ex", "break clock_gettime@plt", "-ex", "continue",
                          "-ex", "gcore " + core, "-ex", "info thread", "-x", script, "-ex", "kill"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode(errors="replace")
    expect(os.path.exists(core), "gdb wrote no core:\n" + out[-3000:])
    lwp = re.search(r"^\* \d+\s+Thread 0x[0-9a-f]+ \(LWP (\d+)\)", out, re.M)
    frames = [(int(a, 16), name) for a, name in re.findall(r"^FRAME (0x[0-9a-f]+) (\S+)$", out, re.M)]
    expect(lwp and len(frames) == 3 and frames[0][1] == "clock_gettime@plt", "gdb stopped the loop in clock_gettime@plt:\n" + out[-3000:])
    return int(lwp.group(1)), frames


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="pytstates-plt-")
    try:
        with scenario.running([PYTHON, LOOP], workdir) as (proc, facts):
            core = os.path.join(workdir, "core")
            lwp, theirs = stop_in_plt(facts["pid"], core, workdir)
        expect(lwp == facts["lwp"], "gdb stopped the looping thread (LWP %d), not LWP %d" % (facts["lwp"], lwp))
        for extra in ([], ["--no-dwarf"]):
            status, r, err = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--native", "--json"] + extra)
            # gdb's gcore at its breakpoint: the thread's stop signal, SIGTRAP, is the core's signal,
            # told as a CRASH, exit status 1 (CONTRACT.md)
            crash = r["target"]["crash"] or {}
            expect(status == 1 and crash.get("signal_name") == "SIGTRAP", "tstates %s: exit status 1 (%d), CRASH SIGTRAP (%s): %s"
                   % (extra, status, crash.get("signal_name"), err))
            rows = [t for t in r["threads"] if t["lwp"] == lwp]
            expect(rows and rows[0]["native_frames"], "the looping thread has native frames", r["threads"])
            frames = [f for f in rows[0]["native_frames"] if not f.get("inlined") and not f.get("tail_call")]  # as gdb's
            expect(int(frames[0]["pc"], 16) == theirs[0][0], "%s: its innermost frame is gdb's pc %#x" % (extra, theirs[0][0]), frames[:3])
            ours = [int(f["pc"], 16) for f in frames[1:3]]
            expect(ours == [f[0] for f in theirs[1:3]], "%s: unwound out of the PLT stub into gdb's frames #1 and #2: ours %s, gdb %s" % (
                extra, [hex(a) for a in ours], theirs[1:3]), frames[:4])
            if not extra:  # named from DWARF as gdb names them (GCC's ".lto_priv.0": gdb drops the last part)
                names = [(f["function"] or "??").split(".")[0] for f in frames[1:3]]
                expect(names == [f[1].split(".")[0] for f in theirs[1:3]], "the callers named as gdb names them", frames[:4])
            expect(any(f["python"] for f in rows[0]["native_frames"]), "%s: the eval loop running the Python loop is on its stack" % extra, frames)
            tstates = [t for rt in r["runtimes"] for i in rt["interpreters"] for t in i["tstates"]]
            expect(len(tstates) == 1 and tstates[0]["lwp"] == lwp, "%s: the thread state runs on LWP %d" % (extra, lwp), tstates)
    finally:
        scenario.cleanup(workdir)
    print("PASS plt gcore")


if __name__ == "__main__":
    main()
