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
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import gdb_oracle  # noqa: E402
import pyenv  # noqa: E402
import scenario  # noqa: E402
import sid_python  # noqa: E402
from debugger_batch import core_json  # noqa: E402
from findings_cases import expect  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "findings", "swap_host.c")


class Build:
    """swap_host compiled against one CPython: how to run it and what pytstates needs to read it.
    env: the program's environment (None: ours); dwarf_args: what finds its libpython's DWARF (the
    --no-dwarf runs add --no-dwarf instead); kinds: the cores taken besides the live attach;
    free_threaded: no GIL (nobody holds it)."""

    def __init__(self, exe, env=None, dwarf_args=(), kinds=("gcore", "kernel"), fork_kind="gcore", free_threaded=False):
        self.exe, self.env, self.dwarf_args = exe, env, list(dwarf_args)
        self.kinds, self.fork_kind, self.free_threaded = list(kinds), fork_kind, free_threaded
        self.eval_argument = False
        self.layout_nodwarf = "table"  # --no-dwarf: the built-in tables, or _Py_DebugOffsets from 3.13

    def minor(self, series):
        # <= 3.9: no cframe nor entry frame on the stack; with DWARF the eval loop's frame argument
        # places a parked request's state (measured on pyenv's 3.8.18 and 3.9.18).
        self.eval_argument = int(series.split(".")[1]) <= 9
        self.layout_nodwarf = "debug_offsets" if int(series.split(".")[1]) >= 13 else "table"
        return self


def compile_host(workdir, name, cflags, libs, source=SOURCE):
    exe = os.path.join(workdir, os.path.splitext(os.path.basename(source))[0] + "_" + name)
    subprocess.run(["cc", "-O1", "-g", "-I" + os.path.dirname(source)] + cflags + [source, "-o", exe] + libs + ["-lpthread"],
                   check=True)
    return exe


def build_for_pyenv(version, workdir, source=SOURCE):
    """Built against pyenv's `version` (3.12.1); NOT RUN (exit 77) when pyenv has no such version here."""
    prefix = pyenv.require_prefix(version)
    minor = ".".join(version.split(".")[:2])
    config = os.path.join(prefix, "bin", "python%s-config" % minor)
    expect(os.path.exists(config), "pyenv's CPython %s is not installed (%s missing)" % (version, config))
    return Build(build_with_config(config, os.path.join(prefix, "lib"), version, workdir, source)).minor(minor)


def build_with_config(config, libdir, name, workdir, source=SOURCE):
    flags = subprocess.run([config, "--cflags", "--embed"], stdout=subprocess.PIPE, check=True).stdout.decode().split()
    libs = subprocess.run([config, "--ldflags", "--embed"], stdout=subprocess.PIPE, check=True).stdout.decode().split()
    return compile_host(workdir, name, flags, libs + ["-Wl,-rpath," + libdir], source)


def build_for_freethreaded(series, workdir, source=SOURCE):
    """The free-threaded build scripts/python-freethreaded makes (its libpython has DWARF)."""
    out = subprocess.run([os.path.join(TOP, "scripts", "python-freethreaded"), series], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    expect(out.returncode == 0, "a free-threaded CPython %s cannot be built here: %s" % (series, out.stderr.decode(errors="replace").strip()))
    prefix = out.stdout.decode().strip().splitlines()[-1]
    exe = build_with_config(os.path.join(prefix, "bin", "python%st-config" % series), os.path.join(prefix, "lib"), series + "t", workdir, source)
    return Build(exe, free_threaded=True).minor(series)


def build_for_sid(series, cache, workdir):
    """Debian unstable's libpython3.14 / 3.15 (scripts/debian-python's root, glibc 2.43): compiled
    with this machine's compiler and C headers and the root's Python headers, linked to the root's
    libpython with the root's dynamic loader as PT_INTERP and its libraries in DT_RPATH (which,
    unlike RUNPATH, libpython's own dependencies follow too): a program as any other, run without
    a wrapper. Its DWARF is the root's python3.X-dbg debug file (--debug-dir). Cores: the kernel's,
    as the versions tests take for these builds."""
    root = sid_python.unpacked_root(TOP, series, cache)
    include = os.path.join(root, "usr", "include")
    # The root's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>: only that directory
    # of the root's /usr/include is put on the path (the rest is the root's own C library headers).
    arch = os.path.join(workdir, "include", "x86_64-linux-gnu")
    os.makedirs(arch, exist_ok=True)
    os.symlink(os.path.join(include, "x86_64-linux-gnu", "python" + series), os.path.join(arch, "python" + series))
    libdirs = [os.path.join(root, "lib", "x86_64-linux-gnu"), os.path.join(root, "usr", "lib", "x86_64-linux-gnu")]
    exe = compile_host(workdir, series, ["-I" + os.path.join(include, "python" + series), "-I" + os.path.join(workdir, "include")],
                       ["-L" + libdirs[0], "-lpython" + series, "-Wl,--allow-shlib-undefined", "-Wl,--disable-new-dtags",
                        "-Wl,--dynamic-linker=" + os.path.join(root, "lib64", "ld-linux-x86-64.so.2"),
                        "-Wl,-rpath," + ":".join(libdirs)])
    env = dict(os.environ)
    env["PYTHONHOME"] = os.path.join(root, "usr")
    return Build(exe, env=env, dwarf_args=["--debug-dir", os.path.join(root, "usr", "lib", "debug")],
                 kinds=("kernel",), fork_kind="kernel").minor(series)


def norm(address):
    return hex(int(address, 16))


def check_report(r, facts, label, free_threaded=False, eval_argument=None):
    """Every request on its thread, with its function and interpreter; the GIL with the busy one
    (free-threaded: no GIL, none holds it); the spare state parked and made by the main thread; no
    error. eval_argument True: every parked request placed by the eval loop's frame argument
    (DWARF); False (--no-dwarf): no state placed so."""
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
        if eval_argument and req["function"].startswith("parked"):
            expect(t.get("lwp_evidence") == "eval_argument", ctx + ": placed by the eval loop's frame argument (DWARF)", t)
        busy = req["function"].startswith("busy") and not free_threaded
        if free_threaded:
            expect(interp["gil"] == "disabled", ctx + ": its interpreter has no GIL", interp)
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
    if eval_argument is False:
        said = [t for _, t in where.values() if t.get("lwp_evidence") == "eval_argument"]
        expect(not said, label + ": no eval_argument evidence without DWARF", said)
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


def forked_core(facts, workdir, kind):
    """The forked child's core (the process that runs the states): gcore's, or the kernel's (SIGABRT
    to the child; the parent, waiting for it, then exits)."""
    if kind == "gcore":
        core = scenario.gcore(facts["pid"], os.path.join(workdir, "core"))
    else:
        resource.prlimit(facts["pid"], resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        os.kill(facts["pid"], signal.SIGABRT)
        core = os.path.join(workdir, "core")
        for _ in range(300):  # the kernel writes it as the child dies
            if os.path.exists(core) and not os.path.exists("/proc/%d" % facts["pid"]):
                break
            time.sleep(0.1)
    expect(os.path.exists(core), "no %s core of the child %d" % (kind, facts["pid"]))
    return core


def cli(args, build, mode, python):
    kinds = [build.fork_kind] if mode.startswith("fork-") else build.kinds
    ft = build.free_threaded
    with scenario.running([build.exe, mode], env=build.env) as (proc, facts):
        for extra in (build.dwarf_args, ["--no-dwarf"]):
            status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(facts["pid"]), "--json"] + extra)
            expect(status == 0, "live %s: exit status 0: %s" % (extra, err))
            expect(all(rt["layout"] == ("dwarf" if extra != ["--no-dwarf"] else build.layout_nodwarf) for rt in r["runtimes"]),
                   "live %s: the layout read from %s" % (extra, "DWARF" if extra != ["--no-dwarf"] else build.layout_nodwarf), r["runtimes"])
            check_report(r, facts, "%s %s live %s" % (python, mode, extra), ft,
                         (extra != ["--no-dwarf"]) if build.eval_argument else None)
        _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(facts["pid"])] + build.dwarf_args)
        check_text(text, facts, "%s %s live text" % (python, mode))
        for line in re.findall(r"^ *(tstate 0x[0-9a-f]+  id \d+  LWP [^\n]*\n\s+#0 [^\n]*)", text, re.M):
            print("%s %s live: %s" % (python, mode, " ".join(line.split())))
        expect(scenario.still_answers(proc), "the process runs on after pytstates detached")
    for kind in kinds:
        if mode.startswith("fork-"):
            workdir = tempfile.mkdtemp(prefix="pytstates-")
            with scenario.running([build.exe, mode], workdir, env=build.env) as (proc, facts):
                core = forked_core(facts, workdir, kind)
        else:
            facts, core = scenario.take_core([build.exe, mode], kind, env=build.env)
        try:
            for extra in (build.dwarf_args, ["--no-dwarf"]):
                status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"] + extra)
                expect(status == scenario.quiet_status(kind), "%s core %s: exit status %d: %s" % (kind, extra, status, err))
                expect(all(rt["layout"] == ("dwarf" if extra != ["--no-dwarf"] else build.layout_nodwarf) for rt in r["runtimes"]),
                       "%s core %s: the layout read from %s" % (kind, extra, "DWARF" if extra != ["--no-dwarf"] else build.layout_nodwarf),
                       r["runtimes"])
                check_report(r, facts, "%s %s %s core %s" % (python, mode, kind, extra), ft,
                             (extra != ["--no-dwarf"]) if build.eval_argument else None)
                if extra == build.dwarf_args:  # gdb's own reading of the same core, through the same DWARF
                    debug_dir = extra[extra.index("--debug-dir") + 1] if "--debug-dir" in extra else None
                    gdb_oracle.check(build.exe, core, r, "%s %s %s core" % (python, mode, kind), debug_dir=debug_dir)
            _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core] + build.dwarf_args)
            check_text(text, facts, "%s %s %s core text" % (python, mode, kind))
        finally:
            scenario.cleanup(core)


def in_debugger(args, which):
    exe = os.path.join(args.scenarios, "scenario_swap_host")
    for mode in ("uwsgi-busy", "modwsgi-busy"):
        facts, core = scenario.take_core([exe, mode], "gcore")
        try:
            loads = args.gdb_script if which == "gdb" else args.lldb_plugin
            report = core_json(which, loads, exe, core, "py-tstates-check --json")
            check_report(report, facts, "%s %s gcore" % (which, mode))
            gdb_oracle.check(exe, core, report, "%s %s gcore (py-tstates-check in %s)" % (which, mode, which))
        finally:
            scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--gdb-script")
    p.add_argument("--lldb-plugin")
    p.add_argument("--python314-dir", default=os.path.join(TOP, "build", "python314"), help="where scripts/debian-python unpacks 3.14")
    p.add_argument("--python315-dir", default=os.path.join(TOP, "build", "python315"), help="where scripts/debian-python unpacks 3.15")
    p.add_argument("case", help="debian | a pyenv version | 3.14 | 3.15 | 3.13t | gdb | lldb")
    args = p.parse_args()
    if args.case in ("gdb", "lldb"):
        in_debugger(args, args.case)
    else:
        workdir = tempfile.mkdtemp(prefix="pytstates-swap-")
        try:
            if args.case == "debian":
                build = Build(os.path.join(args.scenarios, "scenario_swap_host")).minor("%d.%d" % sys.version_info[:2])
            elif args.case in ("3.14", "3.15"):
                build = build_for_sid(args.case, args.python314_dir if args.case == "3.14" else args.python315_dir, workdir)
            elif args.case.endswith("t"):
                build = build_for_freethreaded(args.case[:-1], workdir)
            else:
                build = build_for_pyenv(args.case, workdir)
            for mode in ("uwsgi-busy", "modwsgi-busy", "fork-uwsgi-busy"):
                cli(args, build, mode, args.case)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    print("PASS swap %s" % args.case)


if __name__ == "__main__":
    main()
