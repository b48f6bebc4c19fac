#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every CPython users run, 3.8 to 3.15 and free-threaded 3.13t, with and without debug info, on real
binaries and real cores.

tests/scenarios/versions/threads_gil.py is run by the interpreter under test until it prints FACTS
and READY (four workers and the main thread blocked in C calls with the GIL released, one thread
holding the GIL in read() called through ctypes.PyDLL); a core is taken (gdb's gcore; the kernel's
for 3.14, whose glibc 2.43 threads gcore dumps with all-zero stacks) and `pytstates tstates --json`
is held against what each thread said about itself.

Interpreters:
  3.8.18 ... 3.13.0   pyenv's builds (`pyenv root` or $PYENV_ROOT): shared libpython with DWARF
  debian              Debian's /usr/bin/python3 (3.11 on Debian 12, 3.13 on 13: CPython linked into
                      the executable, stripped; DWARF in python3-dbg's /usr/lib/debug/.build-id file)
  debian-dbg          Debian's debug build /usr/bin/python3.Xd (DWARF inside)
  3.14, 3.15          Debian's unstable python3.14 / python3.15 (static, stripped, glibc 2.43; DWARF
                      of the release build in python3.1X-dbg), unpacked by scripts/debian-python and
                      read with --sysroot
  3.13t, 3.14t        free-threaded (PEP 703) builds with DWARF, made by scripts/python-freethreaded
                      from Debian's source packages (cached outside the build tree); 3.14t exits 77
                      (skipped, with the reason) while no python3.14 source package downloads
Modes:
  dwarf    as installed: the layout comes from DWARF
  nodwarf  --no-dwarf: the layout from _Py_DebugOffsets (3.13+) or the built-in tables
  strip-g  pyenv's libpython copied and stripped with `strip -g`, loaded through LD_LIBRARY_PATH
  strip-s  the same with `strip -s` (no .symtab either: 3.12+ must find _Py_tss_tstate from code)

Every difference is reported (field, expected, got), not only the first; exit status 1 when any.
A pyenv release missing from the machine is not run (exit 77, the reason said); one that is there
without its interpreter, libpython or DWARF is a failure that names it.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import gdb_oracle  # noqa: E402
import native_check  # noqa: E402
import pyenv  # noqa: E402
import scenario  # noqa: E402

SCRIPT = os.path.join(TOP, "tests", "scenarios", "versions", "threads_gil.py")
# The suite's Python: the drivers run under /usr/bin/python3.
SUITE = "%d.%d" % sys.version_info[:2]
PYENV_VERSIONS = ["3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0"]


class Missing(Exception):
    """The interpreter under test is not on this machine."""


class Unavailable(Exception):
    """The interpreter under test cannot be had from anything reachable (exit 77: skipped)."""


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, check=True).stdout.decode()
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def sections(path):
    out = subprocess.run(["readelf", "-SW", path], stdout=subprocess.PIPE, check=True).stdout.decode()
    return set(re.findall(r"\]\s+(\.\S+)", out))


class Target:
    """How to run one interpreter in one mode, and what pytstates must say about it."""

    def __init__(self, name, mode, workdir, sid_dirs):
        self.name, self.mode = name, mode
        self.env = dict(os.environ)
        self.env.pop("PYTHONHOME", None)
        self.env.pop("PYTHONPATH", None)
        self.extra = ["--no-dwarf"] if mode == "nodwarf" else []
        self.kind = "gcore"
        self.unwanted_module = None  # a file that must not be mapped (the unstripped original)
        self.free_threaded = False
        if name in PYENV_VERSIONS:
            self.pyenv(name, workdir)
        elif name == "debian":
            self.debian("/usr/bin/python3", SUITE, dbg_file=True)
        elif name == "debian-dbg":
            self.debian("/usr/bin/python%sd" % SUITE, SUITE, dbg_file=False)
        elif name in ("3.14", "3.15"):
            self.debian_sid(name, sid_dirs[name])
        elif name in ("3.13t", "3.14t"):
            self.freethreaded(name[:-1])
        else:
            raise SystemExit("unknown interpreter %r" % name)
        if mode.startswith("strip-") and name not in PYENV_VERSIONS:
            raise SystemExit("mode %s is for pyenv's shared libpython only" % mode)
        self.minor = int(self.series.split(".")[1])
        self.layout = "dwarf" if mode == "dwarf" else ("debug_offsets" if self.minor >= 13 else "table")

    def pyenv(self, version, workdir):
        series = ".".join(version.split(".")[:2])
        prefix = pyenv.require_prefix(version)  # NOT RUN (exit 77) where pyenv has not this release
        python = os.path.join(prefix, "bin", "python" + series)
        libpython = os.path.join(prefix, "lib", "libpython%s.so.1.0" % series)
        for path in (python, libpython):
            if not os.path.exists(path):
                raise Missing("pyenv's CPython %s is installed without %s" % (version, path))
        self.series, self.version = series, version
        self.argv = [python]
        self.module = os.path.realpath(libpython)
        if self.mode == "dwarf" and ".debug_info" not in sections(libpython):
            raise Missing("pyenv's CPython %s was built without DWARF (%s has no .debug_info)" % (version, libpython))
        if self.mode.startswith("strip-"):
            libdir = os.path.join(workdir, "lib")
            os.makedirs(libdir)
            copy = os.path.join(libdir, os.path.basename(libpython))
            shutil.copy2(libpython, copy)
            subprocess.run(["strip", "-" + self.mode[-1], copy], check=True)
            left = sections(copy)
            assert ".debug_info" not in left, "strip -g left .debug_info in %s" % copy
            assert (".symtab" in left) == (self.mode == "strip-g"), "%s: .symtab after %s" % (copy, self.mode)
            self.env["LD_LIBRARY_PATH"] = libdir
            self.unwanted_module = self.module
            self.module = copy

    def debian(self, python, series, dbg_file):
        if not os.path.exists(python):
            raise Missing("Debian's %s is missing on this machine (apt-get install %s)"
                          % (python, "python3-dbg" if python.endswith("d") else "python3"))
        self.series, self.version = series, None
        self.argv = [python]
        self.module = os.path.realpath(python)
        if dbg_file and self.mode == "dwarf":
            bid = build_id(self.module)
            debug = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
            if not os.path.exists(debug):
                raise Missing("the DWARF of %s is missing on this machine: no %s (apt-get install python3-dbg)"
                              % (self.module, debug))

    def debian_sid(self, series, cache):
        out = subprocess.run([os.path.join(TOP, "scripts", "debian-python"), series, cache],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise Missing("CPython %s from Debian's unstable suite is not available: %s"
                          % (series, out.stderr.decode(errors="replace").strip()))
        root = out.stdout.decode().strip().splitlines()[-1]
        self.series, self.version = series, None
        self.root = root
        self.env["PYTHONHOME"] = os.path.join(root, "usr")
        self.argv = [os.path.join(root, "lib64", "ld-linux-x86-64.so.2"),
                     "--library-path", os.path.join(root, "lib", "x86_64-linux-gnu"),
                     os.path.join(root, "usr", "bin", "python" + series)]
        self.module = os.path.join(root, "usr", "bin", "python" + series)
        self.extra += ["--sysroot", root]
        self.kind = "kernel"

    def freethreaded(self, series):
        print("building or reusing the free-threaded CPython %st (scripts/python-freethreaded; a cold cache "
              "builds it from Debian's source, a few minutes)" % series, flush=True)
        out = subprocess.run([os.path.join(TOP, "scripts", "python-freethreaded"), series],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise Unavailable("a free-threaded CPython %s cannot be built here: %s"
                              % (series, out.stderr.decode(errors="replace").strip()))
        prefix = out.stdout.decode().strip().splitlines()[-1]
        self.series, self.version = series, None
        self.argv = [os.path.join(prefix, "bin", "python%st" % series)]
        self.module = os.path.realpath(os.path.join(prefix, "lib", "libpython%st.so.1.0" % series))
        self.free_threaded = True


class Checker:
    def __init__(self):
        self.failures = []

    def eq(self, what, expected, got):
        if expected != got:
            self.failures.append("%s: expected %s, got %s" % (what, json.dumps(expected), json.dumps(got)))
            return False
        return True

    def true(self, what, cond, detail=""):
        if not cond:
            self.failures.append(what + (": " + detail if detail else ""))
        return cond


def mapped_files(pid):
    with open("/proc/%d/maps" % pid) as f:
        return {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}


def check(target, facts, report, maps, c):
    if target.version:
        c.eq("FACTS version (the interpreter that ran)", target.version, facts["version"])
    c.true("FACTS version %s is CPython %s" % (facts["version"], target.series),
           facts["version"].startswith(target.series + "."))
    if maps is not None:
        c.true("the process mapped %s" % target.module, target.module in maps,
               "mapped: %s" % sorted(m for m in maps if "python" in m))
        if target.unwanted_module:
            c.true("the process did not map the unstripped %s" % target.unwanted_module,
                   target.unwanted_module not in maps)
    runtimes = report["runtimes"]
    if not c.eq("number of runtimes", 1, len(runtimes)):
        return
    rt = runtimes[0]
    c.eq("runtimes[0].version", facts["version"], rt["version"])
    c.eq("runtimes[0].module", target.module, rt["module"])
    c.eq("runtimes[0].layout (%s, %s)" % (target.name, target.mode), target.layout, rt.get("layout"))
    c.eq("runtimes[0].free_threaded", target.free_threaded, rt.get("free_threaded"))
    if target.mode == "nodwarf":
        c.true("no field comes from DWARF with --no-dwarf", "dwarf" not in rt.get("layout_sources", {}).values(),
               json.dumps(rt.get("layout_sources")))
    for note in rt.get("notes", []):
        c.true("runtimes[0].notes has no layout disagreement", not note.startswith("layout:"), note)
    if not c.eq("number of interpreters", 1, len(rt["interpreters"])):
        return
    interp = rt["interpreters"][0]
    c.eq("interpreters[0].main", True, interp["main"])
    holder = [t for t in facts["threads"] if t["lwp"] == facts["gil_holder_lwp"]][0]
    listed = {t["address"]: t for t in interp["tstates"]}
    c.eq("the set of tstates", sorted(t["tstate"] for t in facts["threads"]), sorted(listed))
    if target.free_threaded:
        # No GIL: the thread in read() through PyDLL is the one attached; the others detached.
        c.eq("interpreters[0].gil", "disabled", interp.get("gil"))
        c.eq("interpreters[0].gil_holder", None, interp["gil_holder"])
        for t in interp["tstates"]:
            c.eq("state of tstate %s (LWP %s)" % (t["address"], t["lwp"]),
                 "attached" if t["address"] == holder["tstate"] else "detached", t.get("state"))
            c.eq("holds_gil of tstate %s" % t["address"], False, t["holds_gil"])
    else:
        c.eq("interpreters[0].gil_holder", holder["tstate"], interp["gil_holder"])
        for t in interp["tstates"]:
            c.eq("holds_gil of tstate %s (LWP %s)" % (t["address"], t["lwp"]), t["address"] == holder["tstate"], t["holds_gil"])
    newer = target.minor >= 11
    for t in facts["threads"]:
        got = listed.get(t["tstate"])
        who = "tstate %s (%s, LWP %d)" % (t["tstate"], t["name"], t["lwp"])
        if not c.true(who + " is listed", got is not None):
            continue
        c.eq(who + " lwp", t["lwp"], got["lwp"])
        c.eq(who + " thread_id", t["pthread"], got["thread_id"])
        c.eq(who + " native_thread_id", t["lwp"] if newer else None, got["native_thread_id"])
        top = got["frames"][0] if got["frames"] else None
        c.eq(who + " frames[0]", {"function": t["function"], "file": t["file"], "line": t["line"]},
             top and {"function": top["function"], "file": os.path.basename(top["file"]), "line": top["line"]})
    rows = {row["lwp"]: row for row in report["threads"]}
    source = "_Py_tss_tstate" if target.minor >= 12 else "gilstate.tstate_current"
    c.eq("the set of OS threads (LWPs)", sorted(t["lwp"] for t in facts["threads"]), sorted(rows))
    for t in facts["threads"]:
        row = rows.get(t["lwp"])
        who = "threads[lwp=%d] (%s)" % (t["lwp"], t["name"])
        if row is None:
            continue
        c.eq(who + ".pthread", t["pthread"], row["pthread"])
        c.eq(who + ".current_tstate", t["tstate"] if t is holder else None, row["current_tstate"])
        # null must be what CPython holds, not a read that failed
        c.eq(who + ".current_source", source, row.get("current_source"))
        c.eq(who + ".current_status (set only when the read failed)", None, row.get("current_status"))
        c.eq(who + ".autotss_tstate", t["autotss"], row["autotss_tstate"])
    errors = [f for f in report.get("findings", []) if f["severity"] == "error"]
    c.eq("error findings", [], errors)


def check_native(args, target, core, c, said):
    """--native: the Python frames merged under the eval-loop frames are each thread's own stack,
    in order; the innermost native frames are gdb's (said: gdb_oracle's reading, whose run
    printed gdb's backtraces)."""
    base = ["tstates", "--core", core, "--json", "--frames", "200"] + target.extra
    _, native, _ = scenario.run_pytstates(args.pytstates, base + ["--native"], expect_status=scenario.quiet_status(target.kind))
    _, full, _ = scenario.run_pytstates(args.pytstates, base, expect_status=scenario.quiet_status(target.kind))
    # A stripped executable whose eval loop GCC split (3.14's .cold part) leaves frames unplaced.
    complete = not (target.name in ("3.14", "3.15") and target.mode == "nodwarf")
    for problem in native_check.check_python_merge(native, full, complete):
        c.failures.append("--native merge: " + problem)
    if target.mode != "dwarf" or target.name in ("3.14", "3.15") or said is None:
        return  # without DWARF gdb names other frames; `ld.so python3.1X`: gdb 13 takes ld.so for the program
    for problem in native_check.compare_with_gdb(native, native_check.parse_backtraces(said["backtraces"])):
        c.failures.append("native frames vs gdb: " + problem)


def gdb_reading(target, core, workdir):
    """gdb's own reading of the core through DWARF (tests/lib/gdb_oracle.py), one gdb run: the
    unstripped build's DWARF in every mode (--no-dwarf and the stripped copies read the same
    process), found for a stripped copy by its build-id in a directory made here."""
    debug_dirs = []
    if getattr(target, "root", None):  # the core names the tree's files by their paths here: no sysroot, its debug files
        debug_dirs.append(os.path.join(target.root, "usr", "lib", "debug"))
    if target.unwanted_module:  # strip-g / strip-s: the original file is the copy's debug file
        bid = build_id(target.unwanted_module)
        link = os.path.join(workdir, "debug", ".build-id", bid[:2], bid[2:] + ".debug")
        if not os.path.exists(link):
            os.makedirs(os.path.dirname(link))
            os.symlink(target.unwanted_module, link)
        debug_dirs += [os.path.join(workdir, "debug"), "/usr/lib/debug"]
    program = target.module if target.module.endswith(target.series) else target.argv[-1]
    return gdb_oracle.read(program, core, debug_dir=":".join(debug_dirs) or None)


def check_gdb(target, said, report, c, where):
    """pytstates held against gdb's reading: every interpreter's thread states and GIL, every
    thread's current and PyGILState states and the states its eval loops run."""
    oracle = gdb_oracle.compare(said, report, where)
    gdb_oracle.summarize(oracle, said, where)
    for problem in oracle.problems:
        c.failures.append("gdb: " + problem)


BUSY_SCRIPT = os.path.join(TOP, "tests", "scenarios", "versions", "threads_busy.py")


def check_busy(args, target, workdir, c):
    """A thread spinning in Python beside threads in Event.wait and sleep: every thread state
    and its innermost frame; on a free-threaded build the spinning one is attached, the others
    detached, and there is no GIL."""
    if target.minor < 13:
        return
    coredir = os.path.join(workdir, "busy")
    os.makedirs(coredir)
    facts, core = scenario.take_core(target.argv + [BUSY_SCRIPT], "kernel", workdir=coredir, env=target.env)
    status, report, err = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--json", "--frames", "3"] + target.extra)
    if not c.eq("busy: pytstates exit status", scenario.quiet_status("kernel"), status):  # its SIGABRT: a CRASH
        c.failures.append("busy: " + err.strip())
        return
    check_gdb(target, gdb_reading(target, core, workdir), report, c, "busy core")
    tstates = {t["address"]: t for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"]}
    expected = {t["tstate"]: t for t in facts["threads"]}
    expected[facts["main"]["tstate"]] = {"name": "main", "function": None}
    c.eq("busy: the set of thread states", sorted(expected), sorted(tstates))
    for address, t in expected.items():
        got = tstates.get(address)
        if got is None or t["function"] is None:
            continue
        c.eq("busy: %s's innermost function" % t["name"], t["function"], got["frames"][0]["function"] if got["frames"] else None)
        if target.free_threaded:
            c.eq("busy: %s's state" % t["name"], "attached" if t["name"] == "spins" else "detached", got.get("state"))
    if target.free_threaded:
        c.eq("busy: no GIL", "disabled", report["runtimes"][0]["interpreters"][0].get("gil"))
    print("busy: %s" % ", ".join("%s in %s (%s)" % (t["name"], (tstates.get(a) or {}).get("frames", [{}])[0].get("function") if (tstates.get(a) or {}).get("frames") else None,
                                                   (tstates.get(a) or {}).get("state")) for a, t in expected.items()))


def summary(report):
    """What pytstates said, in a few lines, for the failure report."""
    lines = []
    for rt in report["runtimes"]:
        lines.append("runtime %s %s in %s layout=%s notes=%s" % (rt["address"], rt["version"], rt["module"],
                                                                  rt.get("layout"), rt.get("notes", [])))
        for i in rt["interpreters"]:
            lines.append("  interpreter %s gil_holder=%s" % (i["address"], i["gil_holder"]))
            for t in i["tstates"]:
                f = t["frames"][0] if t["frames"] else {}
                lines.append("    tstate %s lwp=%s thread_id=%s native=%s holds_gil=%s top=%s:%s:%s%s" % (
                    t["address"], t["lwp"], t["thread_id"], t["native_thread_id"], t["holds_gil"],
                    f.get("function"), os.path.basename(f.get("file", "")), f.get("line"),
                    "  note=" + t["note"] if t.get("note") else ""))
    for row in report["threads"]:
        lines.append("  thread " + json.dumps(row, sort_keys=True))
    for f in report.get("findings", []):
        lines.append("  finding " + json.dumps(f, sort_keys=True))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pytstates", required=True)
    p.add_argument("--python314-dir", default=os.path.join(TOP, "build", "python314"))
    p.add_argument("--python315-dir", default=os.path.join(TOP, "build", "python315"))
    p.add_argument("--keep", action="store_true", help="keep the core and the work directory")
    p.add_argument("--show", action="store_true", help="print what pytstates said when it passes too")
    p.add_argument("interpreter", help=", ".join(PYENV_VERSIONS + ["debian", "debian-dbg", "3.14", "3.15", "3.13t", "3.14t"]))
    p.add_argument("mode", choices=["dwarf", "nodwarf", "strip-g", "strip-s"])
    args = p.parse_args()
    label = "%s %s" % (args.interpreter, args.mode)
    workdir = tempfile.mkdtemp(prefix="pytstates-versions-")
    try:
        try:
            target = Target(args.interpreter, args.mode, workdir, {"3.14": args.python314_dir, "3.15": args.python315_dir})
        except Missing as e:
            print("FAIL %s: %s" % (label, e))
            return 1
        except Unavailable as e:
            print("SKIP %s: %s" % (label, e))
            return 77
        maps = {}

        def look(proc, facts):
            maps["files"] = mapped_files(facts["pid"])

        coredir = os.path.join(workdir, "core")
        os.makedirs(coredir)
        facts, core = scenario.take_core(target.argv + [SCRIPT], target.kind, workdir=coredir,
                                         env=target.env, after_ready=look)
        cmd = ["tstates", "--core", core, "--json", "--frames", "3"] + target.extra
        status, report, err = scenario.run_pytstates(args.pytstates, cmd)
        print("$ %s %s" % (args.pytstates, " ".join(cmd)))
        if status not in (0, 1):
            print("FAIL %s: pytstates exited %d: %s" % (label, status, err.strip()))
            return 1
        c = Checker()
        c.eq("pytstates exit status", scenario.quiet_status(target.kind), status)  # a kernel core's SIGABRT: a CRASH, 1
        check(target, facts, report, maps.get("files"), c)
        said = gdb_reading(target, core, workdir)
        check_gdb(target, said, report, c, label)
        check_native(args, target, core, c, said)
        check_busy(args, target, workdir, c)
        if c.failures:
            print("FAIL %s (%d differences):" % (label, len(c.failures)))
            for f in c.failures:
                print("  - " + f)
            print("FACTS " + json.dumps(facts))
            print("pytstates said:\n" + summary(report))
            if err.strip():
                print("pytstates stderr: " + err.strip())
            return 1
        if args.show:
            print("pytstates said:\n" + summary(report))
        print("PASS %s: CPython %s, layout %s, %d thread states, GIL holder LWP %d" % (
            label, facts["version"], report["runtimes"][0]["layout"], len(facts["threads"]), facts["gil_holder_lwp"]))
        return 0
    finally:
        if args.keep:
            print("kept " + workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
