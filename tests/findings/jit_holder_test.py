#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The `unknown` place of a thread state (scenario jit_holder_host): a thread holds the GIL with its
own thread state while it waits in code of an anonymous executable mapping (as a JIT's code with no
unwind info), every register cleared; no thread runs Python and no frame names the state. Up to
3.11 the process-wide gilstate.tstate_current says the state runs; which thread runs it no evidence
tells (its thread's stack cannot be unwound past the mapping, and what lies above the stack's top,
PyGILState's pthread_key slot in struct pthread, is no frame). pytstates must say so: JSON
`"lwp": null`, `"parked": false`, `"lwp_evidence": "unknown"`, the GIL held by it; the text
`runs on a thread not found`, made by the thread the program says took the GIL
(threading.get_native_id(), gettid()); no finding. Live, from gcore's and the kernel's cores,
with and without DWARF.

python: "debian" (the scenario built by CMake against Debian's 3.11) or a pyenv version ("3.8.18"),
compiled here against that version's libpython."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import pyenv  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

SOURCE = os.path.join(TOP, "tests", "scenarios", "findings", "jit_holder_host.c")


def build_for_pyenv(version, workdir):
    """Built against pyenv's `version` (3.8.18); NOT RUN (exit 77) when pyenv has no such version here."""
    prefix = pyenv.require_prefix(version)
    minor = ".".join(version.split(".")[:2])
    config = os.path.join(prefix, "bin", "python%s-config" % minor)
    expect(os.path.exists(config), "pyenv's CPython %s is not installed (%s missing)" % (version, config))
    flags = subprocess.run([config, "--cflags", "--embed"], stdout=subprocess.PIPE, check=True).stdout.decode().split()
    libs = subprocess.run([config, "--ldflags", "--embed"], stdout=subprocess.PIPE, check=True).stdout.decode().split()
    exe = os.path.join(workdir, "jit_holder_host_" + version)
    subprocess.run(["cc", "-O1", "-g", "-I" + os.path.dirname(SOURCE)] + flags + [SOURCE, "-o", exe] + libs +
                   ["-Wl,-rpath," + os.path.join(prefix, "lib"), "-lpthread"], check=True)
    return exe


def norm(address):
    return hex(int(address, 16))


def placed_by_tls(r):
    """From 3.12 the thread's own _Py_tss_tstate names its state: the holder is placed by it
    (evidence current), so only up to 3.11 does nothing place it."""
    return tuple(int(x) for x in r["runtimes"][0]["version"].split(".")[:2]) >= (3, 12)


def check_report(r, facts, label):
    expect(facts["python_lwp"] == facts["jit_lwp"] and facts["gil_check"] == 1,
           label + ": the program's own account (Python and C agree on the thread; it holds the GIL)", facts)
    jit, main = norm(facts["jit_tstate"]), norm(facts["main_tstate"])
    found = {}
    for rt in r["runtimes"]:
        for interp in rt["interpreters"]:
            for t in interp["tstates"]:
                found[t["address"]] = (interp, t)
    interp, t = found[jit]
    if placed_by_tls(r):
        expect(t["lwp"] == facts["jit_lwp"] and t["parked"] is False and t["lwp_evidence"] == "current",
               label + ": the GIL holder's state is placed by its thread's _Py_tss_tstate (lwp_evidence current)", t)
    else:
        expect(t["lwp"] is None and t["parked"] is False and t["lwp_evidence"] == "unknown",
               label + ": the GIL holder's state runs on a thread not known (lwp null, parked false, lwp_evidence unknown)", t)
    expect(t["holds_gil"] is True and interp["gil_holder"] == jit, label + ": it holds the GIL", interp)
    # made_by_lwp is given only where the maker is not the runner.
    expect(t.get("made_by_lwp", t["lwp"]) == facts["jit_lwp"], label + ": made by the thread that took the GIL", t)
    _, m = found[main]
    expect(m["parked"] is True and m["lwp"] is None, label + ": the main thread's released state is parked", m)
    for row in r["threads"]:
        runs = row["lwp"] == facts["jit_lwp"] and placed_by_tls(r)
        expect((jit in (row.get("tstates") or [])) == runs,
               label + (": only LWP %d is said to run it" % facts["jit_lwp"] if placed_by_tls(r) else ": no thread is said to run it"), row)
    expect(not r["findings"], label + ": no finding", r["findings"])
    return t["id"], placed_by_tls(r)


def check_text(text, facts, tstate_id, label, tls):
    jit = norm(facts["jit_tstate"])
    if tls:
        line = re.search(r"^    tstate %s  id %d  LWP %d  .*\[holds GIL\](  \"[^\"]*\")?$" % (re.escape(jit), tstate_id, facts["jit_lwp"]),
                         text, re.M)
        expect(line, label + ": the holder's line names LWP %d" % facts["jit_lwp"], text)
        # 3.13+: threading, imported on this thread, gave _MainThread the main thread's ident but
        # this thread's native id; the name follows the ident.
        expect(line and '"MainThread"' not in line.group(0), label + ": the holder is not named MainThread", text)
        expect("No findings." in text, label + ": no finding", text)
        print("%s: %s" % (label, line.group(0).strip()))
        return
    line = "    tstate %s  id %d  runs on a thread not found  made by LWP %d  [holds GIL]\n" % (jit, tstate_id, facts["jit_lwp"])
    expect(line in text, label + ": the line %r" % line, text)
    expect(re.search(r"GIL held by %s  2 thread states\n" % re.escape(jit), text), label + ": the GIL line names no LWP", text)
    expect("No findings." in text, label + ": no finding", text)
    # LWP, PTHREAD, PYTHREADSTATE (gcore's cores put gdb's thread number first)
    row = re.search(r"^  (?:\d+ +)?%d  +\S+  +(\S+)" % facts["jit_lwp"], text, re.M)
    expect(row and row.group(1) == "-", label + ": the thread table gives LWP %d no thread state" % facts["jit_lwp"], text)
    print("%s: %s" % (label, line.strip()))


def run(args, exe, kind):
    if kind == "live":
        with scenario.running([exe]) as (proc, facts):
            target = ["--pid", str(facts["pid"])]
            check(args, target, facts, kind)
            expect(scenario.still_answers(proc), "the process runs on after pytstates detached")
        return
    facts, core = scenario.take_core([exe], kind)
    try:
        check(args, ["--core", core], facts, kind + " core")
    finally:
        scenario.cleanup(core)


def check(args, target, facts, label):
    tstate_id, tls = None, False
    for extra in ([], ["--no-dwarf"]):
        status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--json"] + target + extra)
        want = scenario.quiet_status(label.split()[0])  # "kernel core": 1, its SIGABRT a CRASH
        expect(status == want, "%s %s: exit status %d, not %d: %s" % (label, extra, status, want, err))
        tstate_id, tls = check_report(r, facts, "%s %s %s" % (args.case, label, extra))
    _, text, _ = scenario.run_pytstates(args.pytstates, ["check"] + target)
    check_text(text, facts, tstate_id, "%s %s text" % (args.case, label), tls)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("case", help="debian | a pyenv version (up to 3.11: from 3.12 each thread's own current state places it)")
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="pytstates-jit-")
    try:
        exe = (os.path.join(os.path.abspath(args.scenarios), "scenario_jit_holder_host") if args.case == "debian"
               else build_for_pyenv(args.case, workdir))
        for kind in ("live", "gcore", "kernel"):
            run(args, exe, kind)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("PASS jit-holder %s" % args.case)


if __name__ == "__main__":
    main()
