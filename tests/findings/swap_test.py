#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Thread states run by threads that did not make them (scenario swap_host: uWSGI's pattern of
sub-interpreter states made on the main thread and swapped into workers, mod_wsgi's thread holding
its main-interpreter state in PyGILState while it runs a sub-interpreter). Each request reported
from Python which OS thread runs it (threading.get_native_id()) and in which interpreter; the C
side printed its gettid() and the thread state pointers. pytstates must put every request's
thread state, its function and the GIL holder on that thread, leave the never-run state parked,
name the maker where it differs ("made before a fork" when the states were made before the
process forked, as uWSGI's master makes them for its worker), and raise no error: live, from gcore's and the kernel's cores,
with and without DWARF, in the CLI, gdb and lldb.

python: "debian" (the scenario built by CMake against Debian's 3.11) or a pyenv version
("3.8.18"), compiled here against that version's libpython; gdb / lldb: the debuggers on a gcore
of the Debian build."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from debugger_batch import core_json  # noqa: E402
from findings_cases import expect  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "findings", "swap_host.c")


def build_for_pyenv(version, workdir):
    prefix = os.path.expanduser("~/.pyenv/versions/" + version)
    minor = ".".join(version.split(".")[:2])
    config = os.path.join(prefix, "bin", "python%s-config" % minor)
    expect(os.path.exists(config), "pyenv's CPython %s is not installed (%s missing)" % (version, config))
    flags = subprocess.run([config, "--cflags", "--embed"], stdout=subprocess.PIPE, check=True).stdout.decode().split()
    libs = subprocess.run([config, "--ldflags", "--embed"], stdout=subprocess.PIPE, check=True).stdout.decode().split()
    exe = os.path.join(workdir, "swap_host_" + version)
    subprocess.run(["cc", "-O1", "-g", "-I" + os.path.dirname(SOURCE)] + flags + [SOURCE, "-o", exe] + libs +
                   ["-Wl,-rpath," + os.path.join(prefix, "lib"), "-lpthread"], check=True)
    return exe


def norm(address):
    return hex(int(address, 16))


def check_report(r, facts, label):
    """Every request on its thread, with its function and interpreter; the GIL with the busy one;
    the spare state parked and made by the main thread; no error."""
    where = {}
    for rt in r["runtimes"]:
        for interp in rt["interpreters"]:
            for t in interp["tstates"]:
                where[t["address"]] = (interp, t)
    requests = facts["workers"] + [facts["modwsgi"]]
    for req in requests:
        expect(req["python_lwp"] == req["lwp"], "%s: Python and C agree on the request's thread" % label, req)
        interp, t = where[norm(req["tstate"])]
        ctx = "%s: request %s (%s)" % (label, req["function"], req["tstate"])
        expect(t["lwp"] == req["lwp"] and not t["parked"], ctx + ": runs on LWP %d" % req["lwp"], t)
        expect(interp["id"] == req["interp_id"], ctx + ": in interpreter %d" % req["interp_id"], t)
        expect(t["frames"] and t["frames"][0]["function"] == req["function"], ctx + ": its innermost Python frame", t)
        busy = req["function"].startswith("busy")
        expect((interp["gil_holder"] == norm(req["tstate"])) == busy and t["holds_gil"] == busy,
               ctx + (": holds the GIL" if busy else ": does not hold the GIL"), interp)
        made_here = req in facts["workers"]
        if made_here and facts["forked"] and t["native_thread_id"] is not None:  # made by the parent's main thread
            expect(t.get("made_by_lwp", 0) is None and t.get("made_before_fork") is True, ctx + ": made before the fork", t)
        elif made_here and facts["forked"]:
            # <= 3.10 keeps no native_thread_id: thread_id alone names the child's main thread, the
            # forking thread's continuation in the child.
            expect(t.get("made_by_lwp") == facts["main_lwp"], ctx + ": made by the forking thread (thread_id)", t)
        elif made_here:  # made by the main thread, run by a worker
            expect(t.get("made_by_lwp") == facts["main_lwp"], ctx + ": made by the main thread", t)
        else:
            expect("made_by_lwp" not in t, ctx + ": made by the thread that runs it (no made_by_lwp)", t)
    spare = where[norm(facts["spare_tstate"])][1]
    maker = None if facts["forked"] and spare["native_thread_id"] is not None else facts["main_lwp"]
    expect(spare["parked"] and spare["lwp"] is None and spare.get("made_by_lwp", 0) == maker,
           label + ": the never-run state is parked, made by the main thread (before the fork: no such thread)", spare)
    gil = where[norm(facts["modwsgi"]["gilstate_tstate"])][1]
    expect(gil["parked"], label + ": the mod_wsgi thread's main-interpreter state is parked", gil)
    runs = {row["lwp"]: row.get("tstates") for row in r["threads"]}
    for req in requests:
        expect(runs.get(req["lwp"]) == [norm(req["tstate"])], "%s: LWP %d runs exactly its request's state" % (label, req["lwp"]), runs)
    errors = [f for f in r["findings"] if f["severity"] == "error"]
    expect(not errors, label + ": no error finding", errors)
    for f in r["findings"]:
        expect(f["sources"], label + ": every finding names its sources", f)
        if f["code"] == "gilstate-other-interpreter":
            expect(f["lwp"] == facts["modwsgi"]["lwp"] and f["tstate"] == norm(facts["modwsgi"]["gilstate_tstate"]),
                   label + ": the PyGILState note is about the mod_wsgi thread's main-interpreter state", f)


def check_text(text, facts, label):
    """The text view: every request's thread state line names its LWP and function; the busy
    one holds the GIL; the table has no unexplained marks."""
    for req in facts["workers"] + [facts["modwsgi"]]:
        m = re.search(r"tstate %s  id \d+  LWP (\d+)[^\n]*\n\s+#0 (\w+)" % re.escape(norm(req["tstate"])), text)
        expect(m and int(m.group(1)) == req["lwp"] and m.group(2) == req["function"],
               "%s: text line of %s" % (label, req["function"]), text)
    expect("+N: N more beneath it" in text and "++" not in text, label + ": the table's marks are explained", text)


def forked_gcore(facts, workdir):
    """gcore of the forked child (the process that runs the states)."""
    prefix = os.path.join(workdir, "core")
    subprocess.run(["gcore", "-o", prefix, str(facts["pid"])], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=120)
    core = "%s.%d" % (prefix, facts["pid"])
    expect(os.path.exists(core), "gcore made no core of the child %d" % facts["pid"])
    return core


def cli(args, exe, mode, python):
    kinds = ["live", "gcore"] if mode.startswith("fork-") else ["live", "gcore", "kernel"]
    for kind in kinds:
        if kind == "live":
            with scenario.running([exe, mode]) as (proc, facts):
                for extra in ([], ["--no-dwarf"]):
                    status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(facts["pid"]), "--json"] + extra)
                    expect(status == 0, "live %s: exit status 0: %s" % (extra, err))
                    check_report(r, facts, "%s %s live %s" % (python, mode, extra))
                _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(facts["pid"])])
                check_text(text, facts, "%s %s live text" % (python, mode))
                expect(scenario.still_answers(proc), "the process runs on after pytstates detached")
            continue
        if mode.startswith("fork-"):
            workdir = tempfile.mkdtemp(prefix="pytstates-")
            with scenario.running([exe, mode], workdir) as (proc, facts):
                core = forked_gcore(facts, workdir)
        else:
            facts, core = scenario.take_core([exe, mode], kind)
        try:
            for extra in ([], ["--no-dwarf"]):
                status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"] + extra)
                expect(status == 0, "%s core %s: exit status 0: %s" % (kind, extra, err))
                check_report(r, facts, "%s %s %s core %s" % (python, mode, kind, extra))
            _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core])
            check_text(text, facts, "%s %s %s core text" % (python, mode, kind))
        finally:
            scenario.cleanup(core)


def in_debugger(args, which):
    exe = os.path.join(args.scenarios, "scenario_swap_host")
    for mode in ("uwsgi-busy", "modwsgi-busy"):
        facts, core = scenario.take_core([exe, mode], "gcore")
        try:
            loads = args.gdb_script if which == "gdb" else args.lldb_plugin
            check_report(core_json(which, loads, exe, core, "py-tstates-check --json"), facts, "%s %s gcore" % (which, mode))
        finally:
            scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--gdb-script")
    p.add_argument("--lldb-plugin")
    p.add_argument("case", help="debian | a pyenv version | gdb | lldb")
    args = p.parse_args()
    if args.case in ("gdb", "lldb"):
        in_debugger(args, args.case)
    else:
        workdir = tempfile.mkdtemp(prefix="pytstates-swap-")
        try:
            exe = (os.path.join(args.scenarios, "scenario_swap_host") if args.case == "debian"
                   else build_for_pyenv(args.case, workdir))
            for mode in ("uwsgi-busy", "modwsgi-busy", "fork-uwsgi-busy"):
                cli(args, exe, mode, args.case)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    print("PASS swap %s" % args.case)


if __name__ == "__main__":
    main()
