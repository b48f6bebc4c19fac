#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Findings no scenario can make on purpose, from real cores with one field patched: the
addresses of the fields come from gdb and the DWARF of the real binaries (python3.11-dbg, the
host's -g build), not from pytstates' own tables.
  internals-istate-mismatch: a pybind11 internals record's istate pointed elsewhere;
  invalid-gil-holder: the GIL recorded as held by a pointer in no list, and by the thread state
  of a thread that is gone."""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import findings_cases  # noqa: E402
import scenario  # noqa: E402
from bad_input import patch  # noqa: E402
from findings_cases import expect, findings  # noqa: E402


def gdb_address(exe, core, expression):
    out = subprocess.run(["gdb", "-q", "-batch", "-nx", "-ex", "set language c++", "-ex", "print/x " + expression, exe, core],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode()
    m = re.search(r"^\$1 = .*?(0x[0-9a-f]+)\s*$", out, re.M)
    expect(m is not None, "gdb could not evaluate %s:\n%s" % (expression, out[-2000:]))
    return int(m.group(1), 16)


def check(args, core, extra=()):
    status, r, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"] + list(extra))
    return status, r


def istate(args):
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr1", "pause"], "gcore")
    try:
        status, r = check(args, core)
        host = [rec for rec in r["internals"] if rec["id"] == facts["host_id"]][0]
        field = gdb_address(exe, core, "&((pybind11::detail::internals*)%s)->istate" % host["address"])
        patch(core, field, int(host["interpreter"], 16) + 8)
        status, r = check(args, core)
        hits = findings(r, "internals-istate-mismatch", "error")
        expect(status == 1 and len(hits) == 1 and facts["host_id"] in hits[0]["message"], "internals-istate-mismatch", r)
    finally:
        scenario.cleanup(core)


def gil_holder(args, which):
    exe = os.path.join(args.scenarios, "scenario_embed_host" if which == "stale" else "scenario_orphan_host")
    facts, core = scenario.take_core([exe], "gcore")
    try:
        # The GIL: in _PyRuntime up to 3.11, the main interpreter's own from 3.12 (Debian 13's 3.13).
        # A thread that took it with a bad state runs that state: last_holder and, up to 3.11,
        # gilstate.tstate_current name it.
        gil = "_PyRuntime.ceval.gil." if sys.version_info[:2] <= (3, 11) else "_PyRuntime.interpreters.main->ceval.gil->"
        locked = gdb_address(exe, core, "&" + gil + "locked")
        holder = gdb_address(exe, core, "&" + gil + "last_holder")
        status, r = check(args, core)
        interp = r["runtimes"][0]["interpreters"][0]
        bogus = int(interp["address"], 16) + 64 if which == "stale" else int(facts["orphan_tstate"], 16)
        patch(core, locked, 1)
        patch(core, holder, bogus)
        if sys.version_info[:2] <= (3, 11):
            # Up to 3.11 the holder runs gilstate.tstate_current (take_gil, then the swap to it).
            patch(core, gdb_address(exe, core, "&_PyRuntime.gilstate.tstate_current"), bogus)
        status, r = check(args, core)
        hits = findings(r, "invalid-gil-holder", "error")
        expect(status == 1 and [f["tstate"] for f in hits] == [hex(bogus)], "invalid-gil-holder names %#x" % bogus, r)
        words = "no thread list" if which == "stale" else "no longer exists"
        expect(words in hits[0]["message"], "the message says why: %r" % words, r)
    finally:
        scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("case", choices=["istate", "gil-stale", "gil-gone"])
    args = p.parse_args()
    if args.case == "istate":
        istate(args)
    else:
        gil_holder(args, "stale" if args.case == "gil-stale" else "gone")
    print("PASS patched " + args.case)


if __name__ == "__main__":
    main()
