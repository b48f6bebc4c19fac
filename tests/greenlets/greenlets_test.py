#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every greenlet of every thread, from real greenlet programs (seed 004).

tests/scenarios/greenlets/parked.py (3 worker threads x 50 greenlets parked in different
functions, nested switches, a dead and a never-started greenlet per thread, the main thread inside
a greenlet of its own, 4 greenlets left by a thread that ended) runs until it prints FACTS and READY; a core is taken (gdb's gcore or the
kernel's) or the live process is read, and `pytstates tstates --json --greenlets` must list every
greenlet the program described, under the thread state of its thread, with its state, main flag,
parent and, for suspended ones, the frames traceback.extract_stack(g.gr_frame) gave.

Greenlets:
  debian   Debian 12's python3-greenlet 2.0.2 on /usr/bin/python3.11 (stripped: the built-in table)
  3.8 ...  greenlet 3.3.2 (unstable's python3-greenlet, scripts/greenlet-source) built with -g for
  3.13     pyenv's CPython 3.8, 3.9, 3.10, 3.12, 3.13 (3.8: the collector's lists in _PyRuntime; <= 3.10:
           the saved frame object is walked; 3.11+: the saved interpreter frame); --no-dwarf reads
           it through the built-in table
  3.14     Debian unstable's own python3-greenlet 3.3.2 binary (stripped: the built-in table) on
           unstable's python3.14 (scripts/debian-python), its kernel core read with --sysroot
  gevent   a gevent 22.10 service on Debian's python3.11 (tests/scenarios/greenlets/gevent_server.py):
           40 gevent Greenlets (a Cython subclass) parked on an Event, in sleep, on a Queue and in a
           socket read, the Hub running, each greenlet's type name checked too
  unknown  3.3.2 built for 3.12 without DWARF but calling itself 3.9.9: no layout may be guessed
Kinds: gcore, kernel, live, gdb (the gdb command on a gcore core, against the CLI), lldb (likewise);
every core is also checked (`check`): no greenlet finding on a healthy process. patched (3.12): a gcore
core with two saved fields rewritten at the addresses gdb gives through greenlet's DWARF (one
greenlet's saved frame set to another thread's live frame, another's frame object set to a greenlet
object): each must be found, on the right greenlet and thread, and nothing else.
"""
import argparse
import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import pyenv  # noqa: E402
import scenario  # noqa: E402
from debugger_batch import core_json  # noqa: E402

SCRIPT = os.path.join(TOP, "tests", "scenarios", "greenlets", "parked.py")
GEVENT_SCRIPT = os.path.join(TOP, "tests", "scenarios", "greenlets", "gevent_server.py")
PYENV = {"3.8": "3.8.18", "3.9": "3.9.18", "3.10": "3.10.13", "3.12": "3.12.1", "3.13": "3.13.0"}


def pyenv_python(minor):
    """pyenv's CPython PYENV[minor]; NOT RUN (exit 77) when pyenv has no such version here."""
    return os.path.join(pyenv.require_prefix(PYENV[minor]), "bin", "python" + minor)


def build_greenlet(python, work, debug, version=None):
    """greenlet 3.3.2's _greenlet built for `python` as setup.py builds it (-O2 -DNDEBUG; -g when
    debug) beside its Python package, in a directory to put on PYTHONPATH. Built once per variant
    (flock: tests run in parallel)."""
    info = json.loads(subprocess.run([python, "-c", "import json, sysconfig; print(json.dumps("
                                      "[sysconfig.get_paths()['include'], sysconfig.get_config_var('EXT_SUFFIX')]))"],
                                     stdout=subprocess.PIPE, check=True).stdout)
    work = os.path.abspath(work)
    name = "%s-%s%s" % (os.path.basename(python), "g" if debug else "s", "-" + version if version else "")
    out = os.path.join(work, name)
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(out, ".complete")):
            return out
        src = subprocess.run([os.path.join(TOP, "scripts", "greenlet-source"), os.path.join(work, "source")],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
        shutil.rmtree(out, ignore_errors=True)
        package = os.path.join(out, "greenlet")
        os.makedirs(package)
        for f in glob.glob(os.path.join(src, "greenlet", "*.py")):
            shutil.copy(f, package)
        if version:
            init = os.path.join(package, "__init__.py")
            with open(init) as f:
                text = f.read()
            with open(init, "w") as f:
                f.write(text.replace("__version__ = '3.3.2'", "__version__ = '%s'" % version))
        so = os.path.join(package, "_greenlet" + info[1])
        subprocess.run(["g++", "-shared", "-fPIC", "-O2", "-DNDEBUG", "-std=c++17"] + (["-g"] if debug else ["-s"]) +
                       ["-I" + info[0], os.path.join(src, "greenlet", "greenlet.cpp"), "-o", so], check=True)
        open(os.path.join(out, ".complete"), "w").close()
        return out


def expect(ok, what, problems):
    if not ok:
        problems.append(what)


def check_report(report, facts, layout, problems):
    """Every greenlet the program described, as pytstates tells it."""
    scans = [rt["greenlet"] for rt in report["runtimes"] if "greenlet" in rt]
    expect(len(scans) == 1, "one runtime reports greenlet (got %d)" % len(scans), problems)
    if not scans:
        return
    scan = scans[0]
    expect(scan["version"] == facts["version"], "greenlet version %r, the program says %r" % (scan["version"], facts["version"]), problems)
    expect(scan["layout"] == layout, "greenlet layout from %r, expected %r" % (scan["layout"], layout), problems)
    expect("problem" not in scan, "no problem reading greenlets: %s" % scan.get("problem"), problems)
    listed = {}
    for interp in report["runtimes"][0]["interpreters"]:
        for ts in interp["tstates"]:
            for g in ts.get("greenlets", []):
                listed[g["address"]] = (ts["lwp"], g)
    for g in scan["without_tstate"]:
        listed[g["address"]] = (g["lwp"], g)
    expect(scan["count"] == len(facts["greenlets"]),
           "%d greenlets found, the program made %d" % (scan["count"], len(facts["greenlets"])), problems)
    for fact in facts["greenlets"]:
        where = "greenlet %s (LWP %s, %s)" % (fact["address"], fact["lwp"], fact["state"])
        if fact["address"] not in listed:
            problems.append(where + " is not listed")
            continue
        lwp, g = listed[fact["address"]]
        expect(lwp == fact["lwp"], "%s listed under LWP %s" % (where, lwp), problems)
        expect(g["state"] == fact["state"], "%s: state %r" % (where, g["state"]), problems)
        expect(g["main"] == fact["main"], "%s: main %r" % (where, g["main"]), problems)
        expect(g["parent"] == fact["parent"], "%s: parent %r, expected %r" % (where, g["parent"], fact["parent"]), problems)
        got = [{"function": f["function"], "file": os.path.basename(f["file"]), "line": f["line"]} for f in g["frames"]]
        expect(got == fact["frames"], "%s: frames %s, expected %s" % (where, got, fact["frames"]), problems)
        if "type" in fact:
            expect(g["type"] == fact["type"], "%s: type %r, expected %r" % (where, g["type"], fact["type"]), problems)


def check_text(text, facts, problems):
    for fact in facts["greenlets"]:
        expect(fact["address"] in text, "the --greenlets text lists %s" % fact["address"], problems)
    per_thread = [line for line in text.splitlines() if line.strip().startswith("greenlets (")]
    expect(len(per_thread) == len(facts["threads"]), "one greenlets line per thread state: %s" % per_thread, problems)


def gdb_value(python, core, expression):
    """The address gdb prints for an expression on the core (through the modules' DWARF)."""
    out = subprocess.run(["gdb", "-q", "-batch", "-nx", "-ex", "set language c++", "-ex", "print " + expression, python, core], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode(errors="replace")
    values = re.findall(r"^\$1 = \([^)]*\) (0x[0-9a-f]+)", out, re.M)
    if not values:
        raise AssertionError("gdb printed no address for %s:\n%s" % (expression, out[-2000:]))
    return int(values[0], 16)


def check_patched(args, python, core, report, facts, problems):
    """Two suspended greenlets of one worker with a saved field each rewritten in the core."""
    sys.path.insert(0, os.path.join(TOP, "tests", "findings"))
    from bad_input import patch  # noqa: E402 (the findings tests' core patcher)
    tstates = [ts for ts in report["runtimes"][0]["interpreters"][0]["tstates"] if len(ts.get("greenlets", [])) > 10]
    a, b = tstates[0], tstates[1]
    x, y = [g for g in a["greenlets"] if g["state"] == "suspended" and not g["main"]][:2]
    impl = "((greenlet::Greenlet*)((PyGreenlet*)%s)->pimpl)->python_state" % x["address"]
    slot = gdb_value(python, core, "&" + impl + ".current_frame")
    live = gdb_value(python, core, "((PyThreadState*)%s)->cframe->current_frame" % b["address"])
    patch(core, slot, live)
    impl = "((greenlet::Greenlet*)((PyGreenlet*)%s)->pimpl)->python_state" % y["address"]
    patch(core, gdb_value(python, core, "&" + impl + "._top_frame.p"), int(y["address"], 16))
    status, checked, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
    found = [f for f in checked["findings"] if f["code"].startswith("greenlet-")]
    expect(status == 1, "the patched core has error findings (exit %d)" % status, problems)
    on = [f for f in found if f["code"] == "greenlet-frame-on-thread"]
    bad = [f for f in found if f["code"] == "greenlet-bad-frame"]
    expect(len(found) == 2 and len(on) == 1 and len(bad) == 1, "two greenlet findings, one of each: %s" % found, problems)
    if on:
        f = on[0]
        expect(f["lwp"] == a["lwp"] and f["tstate"] == b["address"] and x["address"] in f["message"] and
               hex(live) in f["message"] and "LWP %d" % b["lwp"] in f["message"],
               "greenlet-frame-on-thread names %s of LWP %d, frame %#x on LWP %d's stack: %s" % (
                   x["address"], a["lwp"], live, b["lwp"], f), problems)
    if bad:
        f = bad[0]
        expect(f["lwp"] == a["lwp"] and y["address"] in f["message"] and
               "saved frame object %s holds a Python 'greenlet.greenlet' object, not a frame" % y["address"] in f["message"],
               "greenlet-bad-frame names %s and what its frame object holds: %s" % (y["address"], f), problems)
    print("patched core: " + "\n".join(f["code"] + ": " + f["message"] for f in found))


def greenlet_parts(report):
    parts = {"greenlet": [rt.get("greenlet") for rt in report["runtimes"]], "tstates": []}
    for rt in report["runtimes"]:
        for interp in rt["interpreters"]:
            for ts in interp["tstates"]:
                parts["tstates"].append((ts["address"], ts.get("greenlets")))
    return parts


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pytstates", required=True)
    p.add_argument("--work", required=True, help="where greenlet builds are kept")
    p.add_argument("--gdb-script")
    p.add_argument("--lldb-plugin")
    p.add_argument("--no-dwarf", action="store_true")
    p.add_argument("--python314-dir", help="where scripts/debian-python unpacked python3.14")
    p.add_argument("greenlet", choices=["debian", "gevent", "3.8", "3.9", "3.10", "3.12", "3.13", "3.14", "unknown"])
    p.add_argument("kind", choices=["gcore", "kernel", "live", "gdb", "lldb", "patched"])
    args = p.parse_args()

    env = scenario.offline_env()
    sysroot = []
    if args.greenlet == "3.14":
        root = subprocess.run([os.path.join(TOP, "scripts", "debian-python"), "3.14", args.python314_dir],
                              stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip().splitlines()[-1]
        package = subprocess.run([os.path.join(TOP, "scripts", "greenlet-source"), os.path.join(args.work, "source")],
                                 stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
        env.update(PYTHONHOME=os.path.join(root, "usr"), PYTHONPATH=package)
        # python3.14 of unstable runs with unstable's glibc, through its own dynamic loader.
        python = [os.path.join(root, "lib64", "ld-linux-x86-64.so.2"), "--library-path",
                  os.path.join(root, "lib", "x86_64-linux-gnu"), os.path.join(root, "usr", "bin", "python3.14")]
        layout, sysroot = "table", ["--sysroot", root]
    elif args.greenlet in ("debian", "gevent"):
        python, layout = scenario.PYTHON, "table"
        package = "greenlet" if args.greenlet == "debian" else "gevent"
        if not os.path.exists("/usr/lib/python3/dist-packages/%s/__init__.py" % package):
            raise SystemExit("Debian's python3-%s is not installed (scripts/setup installs it)" % package)
    else:
        python = pyenv_python("3.12" if args.greenlet == "unknown" else args.greenlet)
        if not os.path.exists(python):
            raise SystemExit("pyenv's %s has no %s" % (PYENV["3.12" if args.greenlet == "unknown" else args.greenlet], python))
        debug = args.greenlet != "unknown" and not args.no_dwarf
        env["PYTHONPATH"] = build_greenlet(python, args.work, debug, "3.9.9" if args.greenlet == "unknown" else None)
        layout = "dwarf" if debug else "table"
    argv = (python if isinstance(python, list) else [python]) + [GEVENT_SCRIPT if args.greenlet == "gevent" else SCRIPT]
    flags = ["--json", "--greenlets", "--frames", "10"] + (["--no-dwarf"] if args.no_dwarf else []) + sysroot
    problems = []
    core = None
    if args.kind == "live":
        with scenario.running(argv, env=env) as (proc, facts):
            started = time.monotonic()
            _, report, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", str(proc.pid)] + flags, expect_status=0)
            took = time.monotonic() - started
            _, text, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", str(proc.pid), "--greenlets"], expect_status=0)
            expect(proc.poll() is None, "the process still runs after two reads", problems)
    else:
        facts, core = scenario.take_core(argv, "kernel" if args.kind == "kernel" else "gcore", env=env)
        if args.kind != "patched":
            _, checked, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"] + sysroot)
            expect(not [f for f in checked["findings"] if f["code"].startswith("greenlet-")],
                   "no greenlet finding on a healthy process: %s" % checked["findings"], problems)
        started = time.monotonic()
        _, report, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core] + flags, expect_status=scenario.quiet_status(args.kind))
        took = time.monotonic() - started
        _, text, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--greenlets"] + sysroot,
                                            expect_status=scenario.quiet_status(args.kind))
    try:
        if args.greenlet == "unknown":
            scan = report["runtimes"][0].get("greenlet", {})
            expect(scan.get("count") == 0 and "3.9.9" in scan.get("problem", "") and "no built-in layout" in scan.get("problem", ""),
                   "greenlet 3.9.9 without DWARF is reported as unknown, nothing listed: %s" % scan, problems)
            expect("greenlet 3.9.9" in text and "no built-in layout" in text, "the text says greenlet 3.9.9 has no layout", problems)
        else:
            check_report(report, facts, layout, problems)
            check_text(text, facts, problems)
            if args.kind == "patched":
                check_patched(args, python, core, report, facts, problems)
            if args.kind in ("gdb", "lldb"):
                ours = core_json(args.kind, args.gdb_script if args.kind == "gdb" else args.lldb_plugin, python, core,
                                 "py-tstates --json --greenlets --frames 10", timeout=120)
                expect(greenlet_parts(ours) == greenlet_parts(report),
                       "%s's py-tstates --greenlets --json says what the CLI says" % args.kind, problems)
    finally:
        if core:
            scenario.cleanup(core)
    label = "greenlet %s on %s, %s%s" % (facts["version"], facts["python"], args.kind, " --no-dwarf" if args.no_dwarf else "")
    if problems:
        print("FAIL %s (%d differences):" % (label, len(problems)))
        for problem in problems[:40]:
            print("  - " + problem)
        print(text[:6000])
        return 1
    print("OK %s: %d greenlets on %d threads checked (%d objects walked) in %.3f s" % (
        label, len(facts["greenlets"]), len(facts["threads"]), report["runtimes"][0].get("greenlet", {}).get("gc_objects", 0), took))
    print("\n".join(text.splitlines()[:30]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
