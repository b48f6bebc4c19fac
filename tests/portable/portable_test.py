#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The portable archive (scripts/portable), unpacked into a fresh directory:
  bounds  bin/pytstates and every shared object beside it need nothing outside glibc (objdump -p's
          NEEDED, ldd) and no symbol version above GLIBC_2.31, none of libstdc++ or libgcc_s
          (objdump -T); the highest GLIBC_ version is printed.
  check   its `check --json` on a gcore'd core of the seed scenario (pybind11 internals, a stale
          thread state) and of a Python process with threads, and `check --json --pid` on that
          process live, equal the build tree's own pytstates' output on the same targets (the
          live stop's duration left out), with every thread state there.
  modules its lib/pytstates/python/pytstates/ holds one _pytstates_core per CPython 3.8..3.14;
          each imports in its own Python outside any debugger (pyenv's, else /usr/bin's, 3.14
          from Debian unstable: scripts/debian-python) and its `check --json` on a core of the
          seed scenario equals the build tree's CLI's (as tests/frontends' python-modules does for
          the build tree); a module with no such Python here is named as not run, and no pyenv at
          all is exit 77.
  aarch64 the aarch64 archive (scripts/portable --arch arm64, cross-built): readelf's NEEDED of
          bin/pytstates and every shared object (nothing outside glibc and the archive's own
          libraries) and its highest GLIBC_ version needed (<= 2.31, nothing of libstdc++ or
          libgcc_s), printed; then, under qemu-aarch64-static in Debian 12's arm64 tree
          (tests/lib/arm64.py: no capstone, no elfutils there), its `tstates --json` and
          `check --json` (with and without DWARF) on a real arm64 core of python3.11 with threads
          equal this build tree's CLI's reading of the same core byte for byte, and the tree's
          arm64 python3.11 imports the archive's package (its 3.11 module, and ctypes).
The archive is the one scripts/portable made (PYTSTATES_PORTABLE_ARCHIVE, or the newest
pytstates-*-<this machine's arch>-linux.tar.gz in --archive-dir; for aarch64 the newest
pytstates-*-aarch64-linux.tar.gz there, or PYTSTATES_PORTABLE_AARCH64_ARCHIVE); without one the
test exits 77, which ctest reports as skipped (not passed): run scripts/portable first (.ci/run
does), then `ctest -L portable`."""
import argparse
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import json_contract  # noqa: E402
import scenario  # noqa: E402
import pyenv  # noqa: E402
from findings_cases import expect  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "frontends"))
import frontends_test  # noqa: E402  (its CHILD, run in each Python; core_target.py beside it)

SKIP = 77
GLIBC_BOUND = (2, 31)
# The CPythons whose gdb loads a pybind11 module from the archive (older ones: ctypes).
MODULE_TAGS = ["38", "39", "310", "311", "312", "313", "314"]
GLIBC_SONAMES = re.compile(r"^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux[-a-z0-9_]*)\.so(\.[0-9.]+)?$")


def find_archive(archive_dir, machine=None):
    """The archive for `machine` (uname -m; default this machine's): the other architecture's
    archive lies in the same directory."""
    variable = "PYTSTATES_PORTABLE_ARCHIVE" if machine is None else "PYTSTATES_PORTABLE_%s_ARCHIVE" % machine.upper()
    named = os.environ.get(variable)
    if named:
        expect(os.path.isfile(named), "%s names no file: %s" % (variable, named))
        return named
    found = sorted(glob.glob(os.path.join(archive_dir, "pytstates-*-%s-linux.tar.gz" % (machine or platform.machine()))),
                   key=os.path.getmtime)
    return found[-1] if found else None


def unpack(archive, into):
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        top = {n.split("/")[0] for n in names}
        expect(len(top) == 1, "the archive has one top directory", sorted(top))
        expect(all(not n.startswith("/") and ".." not in n.split("/") for n in names), "the archive's paths stay inside it")
        tar.extractall(into)
    return os.path.join(into, top.pop())


def output(argv):
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    expect(out.returncode == 0, "%s exited %d" % (" ".join(argv), out.returncode), out.stdout.decode(errors="replace")[-2000:])
    return out.stdout.decode(errors="replace")


def version_tuple(name):
    return tuple(int(x) for x in name.split("_", 1)[1].split("."))


def bounds(top):
    exe = os.path.join(top, "bin", "pytstates")
    expect(os.access(exe, os.X_OK), "bin/pytstates is an executable")
    objects = [exe] + sorted(p for p in glob.glob(os.path.join(top, "lib", "pytstates", "**", "*.so*"), recursive=True)
                             if os.path.isfile(p))
    highest = (0, 0)
    for obj in objects:
        rel = os.path.relpath(obj, top)
        needed = re.findall(r"^\s*NEEDED\s+(\S+)", output(["objdump", "-p", obj]), re.M)
        outside = [n for n in needed if not GLIBC_SONAMES.match(n)]
        # The archive's own engine, lib/pytstates/libpytstates.so.0 (found through $ORIGIN run paths).
        outside = [n for n in outside if not n.startswith("libpytstates.so")]
        expect(not outside, "%s needs only glibc" % rel, needed)
        symbols = output(["objdump", "-T", obj])
        versions = set(re.findall(r"\b(GLIBC_[0-9.]+)\b", symbols))
        top_version = max((version_tuple(v) for v in versions), default=(0, 0))
        expect(top_version <= GLIBC_BOUND, "%s asks for no symbol version above GLIBC_2.31" % rel, sorted(versions))
        others = sorted(set(re.findall(r"\b((?:GLIBCXX|CXXABI|GCC)_[0-9.]+)\b", symbols)))
        expect(not others, "%s asks nothing of libstdc++ or libgcc_s" % rel, others)
        highest = max(highest, top_version)
        print("%s: NEEDED %s; highest GLIBC_%s" % (rel, " ".join(needed), ".".join(map(str, top_version))))
    ldd = output(["ldd", exe])
    print("ldd bin/pytstates:\n" + ldd.rstrip())
    for line in ldd.splitlines():
        name = line.split()[0]
        expect("not found" not in line, "ldd finds everything", line)
        if name.startswith("libpytstates.so"):
            where = os.path.realpath(line.split("=>")[1].split("(")[0].strip())
            expect(where.startswith(os.path.realpath(top) + os.sep), "the engine is the archive's own", line)
            continue
        expect(name == "linux-vdso.so.1" or GLIBC_SONAMES.match(os.path.basename(name)),
               "ldd bin/pytstates lists only glibc (and the archive's engine)", line)
    print("highest symbol version of the archive: GLIBC_%s" % ".".join(map(str, highest)))
    version = output([exe, "--version"]).strip()
    expect(version.startswith("pytstates "), "bin/pytstates --version says its name", version)
    print("bin/pytstates --version: " + version)


def comparable(report):
    """The report without what differs between two runs by nature: how long a live target was
    stopped. (A core's report is the same byte for byte.)"""
    report = dict(report, target=dict(report["target"]))
    report["target"].pop("stopped_ms", None)
    return report


def same_report(label, built, portable, args, min_tstates, min_findings=0):
    status_b, report_b, err_b = scenario.run_pytstates(built, args)
    status_p, report_p, err_p = scenario.run_pytstates(portable, args)
    expect(status_b in (0, 1) and isinstance(report_b, dict), "the build tree's %s gave a report" % label, err_b)
    expect(status_p == status_b, "the archive's %s exits %d as the build tree's does" % (label, status_b), err_p)
    a, b = comparable(report_b), comparable(report_p)
    if a != b:
        diff = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        expect(False, "the archive's %s equals the build tree's (differing keys: %s)" % (label, diff),
               {"build": {k: a.get(k) for k in diff}, "portable": {k: b.get(k) for k in diff}})
    tstates = sum(len(i["tstates"]) for r in report_p["runtimes"] for i in r["interpreters"])
    findings = len(report_p["findings"])
    print("%s: status %d, %d thread states, %d findings, %d internals records: same as the build tree's" % (
        label, status_p, tstates, findings, len(report_p["internals"])))
    expect(tstates >= min_tstates and findings >= min_findings,
           "%s: at least %d thread states and %d findings" % (label, min_tstates, min_findings), (tstates, findings))


def check(top, built, scenarios):
    portable = os.path.join(top, "bin", "pytstates")
    seed = os.path.join(scenarios, "scenario_seed_host")
    expect(os.access(seed, os.X_OK), "the seed scenario is built: " + seed)
    facts, core = scenario.take_core([seed, "svr2", "pause"], "gcore")
    try:
        same_report("check --json --core (seed)", built, portable, ["check", "--json", "--core", core], 1, 1)
    finally:
        scenario.cleanup(core)
    threads_py = os.path.join(HERE, "..", "scenarios", "live", "many_threads.py")
    facts, core = scenario.take_core([scenario.PYTHON, threads_py, "8"], "gcore")
    try:
        same_report("check --json --core (python3, 9 threads)", built, portable, ["check", "--json", "--core", core], 9)
    finally:
        scenario.cleanup(core)
    with scenario.running([scenario.PYTHON, threads_py, "8"]) as (proc, facts):
        same_report("check --json --pid (python3, 9 threads)", built, portable, ["check", "--json", "--pid", str(proc.pid)], 9)
        expect(scenario.still_answers(proc), "the process answers after both attaches")


def module_python(tag, python314_dir):
    """How to run the CPython of an ABI tag (38, 313t): (argv, environment, what), or None. pyenv's,
    else the system's, else for 3.14 Debian unstable's (scripts/debian-python's tree, run through
    its own ld.so: it needs its glibc)."""
    m = re.match(r"^3(\d+)(t?)$", tag)
    version = "3." + m.group(1)
    env = scenario.offline_env()
    found = pyenv.python(version) if not m.group(2) else None
    if found:
        return [found[1]], env, "pyenv's " + found[0]
    exe = "/usr/bin/python%s%s" % (version, m.group(2))
    if os.access(exe, os.X_OK):
        return [exe], env, exe
    root = os.path.join(python314_dir, "root")
    if tag == "314" and os.path.isfile(os.path.join(root, ".complete")):
        env["PYTHONHOME"] = os.path.join(root, "usr")
        return ([os.path.join(root, "lib64", "ld-linux-x86-64.so.2"), "--library-path", os.path.join(root, "lib", "x86_64-linux-gnu"),
                 os.path.join(root, "usr", "bin", "python3.14")], env, "Debian unstable's python3.14")
    return None


def modules(top, built, scenarios, python314_dir):
    package = os.path.join(top, "lib", "pytstates", "python")
    found = sorted(glob.glob(os.path.join(package, "pytstates", "_pytstates_core.cpython-*.so")))
    tags = sorted((re.search(r"cpython-(\d+t?)-", f).group(1) for f in found), key=lambda t: (int(t.rstrip("t")), t))
    print("modules: " + " ".join(os.path.basename(f) for f in found))
    expect(tags == MODULE_TAGS, "one module per CPython 3.8..3.14", tags)
    if pyenv.root() is None:
        print("NOT RUN: pyenv is not installed here (its CPythons import the modules)")
        sys.exit(pyenv.NOT_RUN)
    seed = os.path.join(scenarios, "scenario_seed_host")
    expect(os.access(seed, os.X_OK), "the seed scenario is built: " + seed)
    _facts, core = scenario.take_core([seed, "svr2", "pause"], "gcore")
    ran, not_run = [], []
    try:
        status, cli, err = scenario.run_pytstates(built, ["check", "--core", core, "--json"])
        expect(status == 1 and isinstance(cli, dict), "the build tree's CLI finds the seed's error", err)
        for tag in tags:
            how = module_python(tag, python314_dir)
            if how is None:
                not_run.append(tag)
                print("cpython-%s: NOT RUN, no CPython 3.%s here" % (tag, tag[1:]))
                continue
            argv, env, what = how
            out = subprocess.run(argv + ["-c", frontends_test.CHILD, package, os.path.join(HERE, "..", "frontends"), core],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, universal_newlines=True, timeout=120)
            expect(out.returncode == 0, "%s ran" % what, out.stderr[-2000:])
            got = json.loads(out.stdout)
            expect(got.get("binding") == "pybind11", "%s loads the archive's module" % what, got.get("error"))
            expect(got["built_for"].startswith("3.%s." % tag[1:]), "%s: the module for its own CPython" % what, got["built_for"])
            expect(got["status"] == status, "%s: check exits %d as the CLI does" % (what, status), got["error"])
            ours = json_contract.loads(got["output"], "cpython-%s's check --json" % tag)
            diff = frontends_test.differences(frontends_test.comparable(ours), frontends_test.comparable(cli))
            expect(not diff, "%s: the archive's module gives the CLI's check" % what, diff[:10])
            ran.append(tag)
            print("cpython-%s in %s (%s): pybind11, check == the build tree's CLI (status %d, %d threads, %d findings)" % (
                tag, what, got["built_for"], got["status"], len(ours["threads"]), len(ours["findings"])))
    finally:
        scenario.cleanup(core)
    expect(ran, "at least one module ran", not_run)
    print("%d of %d modules ran; not run here: %s" % (len(ran), len(tags), " ".join(not_run) or "none"))


def readelf(obj, *options):
    return output(["readelf", "-W"] + list(options) + [obj])


def aarch64(top, built):
    """The cross-built archive's bounds, read with readelf (objdump here knows x86 only), then the
    archive's CLI under qemu on a real arm64 core against the build tree's CLI."""
    import arm64  # noqa: E402 (tests/lib)
    exe = os.path.join(top, "bin", "pytstates")
    objects = [exe] + sorted(p for p in glob.glob(os.path.join(top, "lib", "pytstates", "**", "*.so*"), recursive=True)
                             if os.path.isfile(p))
    own = {os.path.basename(p) for p in objects[1:]}
    highest = (0, 0)
    for obj in objects:
        rel = os.path.relpath(obj, top)
        machine = re.search(r"^\s*Machine:\s*(.*)$", readelf(obj, "-h"), re.M).group(1).strip()
        expect(machine == "AArch64", "%s is an aarch64 ELF file" % rel, machine)
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", readelf(obj, "-d"))
        outside = [n for n in needed if not GLIBC_SONAMES.match(n) and n not in own]
        expect(not outside, "%s needs only glibc and the archive's own libraries" % rel, needed)
        # The versions it needs: .gnu.version_r's names (GLIBC_2.17 is aarch64's first).
        versions = set(re.findall(r"Name: ((?:GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+)", readelf(obj, "-V")))
        glibc = [version_tuple(v) for v in versions if v.startswith("GLIBC_")]
        top_version = max(glibc, default=(0, 0))
        expect(top_version <= GLIBC_BOUND, "%s needs no symbol version above GLIBC_2.31" % rel, sorted(versions))
        others = sorted(v for v in versions if not v.startswith("GLIBC_"))
        expect(not others, "%s needs nothing of libstdc++ or libgcc_s" % rel, others)
        highest = max(highest, top_version)
        print("%s: NEEDED %s; highest GLIBC_%s" % (rel, " ".join(needed), ".".join(map(str, top_version))))
    print("highest symbol version of the aarch64 archive: GLIBC_%s" % ".".join(map(str, highest)))
    try:
        tree, qemu = arm64.root()
    except arm64.Arm64Error as e:
        expect(False, "the arm64 tree (scripts/arm64-root) to run the archive in cannot be had: %s" % e)
    guest = [qemu, "-L", tree, exe]
    version = output(guest + ["--version"]).strip()
    expect(version.startswith("pytstates "), "bin/pytstates --version under qemu says its name", version)
    print("qemu-aarch64-static bin/pytstates --version: " + version)
    workdir = tempfile.mkdtemp(prefix="pytstates-portable-aarch64-")
    try:
        threads = os.path.join(HERE, "..", "scenarios", "arm64", "threads.py")
        facts, core = arm64.take_core([arm64.python(tree), os.path.abspath(threads)], workdir=workdir)
        for args in (["tstates", "--json"], ["check", "--json"], ["check", "--json", "--no-dwarf"]):
            argv = args + ["--core", core, "--sysroot", tree]
            mine = subprocess.run([built] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, env=scenario.offline_env())
            theirs = subprocess.run(guest + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300, env=scenario.offline_env())
            label = " ".join(args)
            expect(mine.returncode in (0, 1), "the build tree's %s exits 0 or 1" % label, mine.stderr.decode(errors="replace")[-2000:])
            report = json_contract.loads(mine.stdout.decode(), "the build tree's " + label)
            expect(report["target"]["arch"] == "aarch64", "the build tree reads an aarch64 core", report["target"])
            expect(theirs.returncode == mine.returncode, "the archive's %s exits %d as the build tree's does" % (label, mine.returncode),
                   theirs.stderr.decode(errors="replace")[-2000:])
            if theirs.stdout != mine.stdout:
                other = json.loads(theirs.stdout.decode())
                diff = [k for k in sorted(set(report) | set(other)) if report.get(k) != other.get(k)]
                expect(False, "the archive's %s under qemu equals the build tree's (differing keys: %s)" % (label, diff),
                       {"build": {k: report.get(k) for k in diff}, "aarch64": {k: other.get(k) for k in diff}})
            tstates = sum(len(i["tstates"]) for r in report["runtimes"] for i in r["interpreters"])
            expect(tstates == len(facts["threads"]), "%s: every thread state of the core (%d)" % (label, len(facts["threads"])), tstates)
            print("%s on an arm64 qemu core of python3.11: status %d, %d thread states, %d findings, layout %s: "
                  "the same %d bytes as the build tree's" % (label, mine.returncode, tstates, len(report.get("findings", [])),
                                                              report["runtimes"][0].get("layout"), len(mine.stdout)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    # The front ends' package in the tree's arm64 python3.11: its 3.11 module, and ctypes.
    package = os.path.join(top, "lib", "pytstates", "python")
    probe = ("import json, sys; sys.path.insert(0, sys.argv[1]); from pytstates.core import core, error; "
             "print(json.dumps({'binding': getattr(core, 'binding', None), 'built_for': getattr(core, 'built_for', None), 'error': error}))")
    for binding in ("pybind11", "ctypes"):
        env = arm64.guest_env(scenario.offline_env())
        env["PYTSTATES_CORE"] = binding
        got = json.loads(subprocess.run([qemu, "-L", tree, arm64.python(tree), "-c", probe, package], stdout=subprocess.PIPE,
                                        env=env, timeout=120).stdout.decode())
        expect(got["binding"] == binding and str(got["built_for"]).startswith("3.11."),
               "the tree's arm64 python3.11 loads the archive's package through %s" % binding, got)
        print("arm64 python3.11 under qemu: pytstates.core through %s (built for %s)" % (binding, got["built_for"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["bounds", "check", "modules", "aarch64"])
    ap.add_argument("--archive-dir", required=True)
    ap.add_argument("--pytstates", required=True, help="the build tree's pytstates")
    ap.add_argument("--scenarios", required=True, help="the build tree's findings scenarios")
    ap.add_argument("--python314-dir", default="", help="scripts/debian-python's 3.14 (modules)")
    args = ap.parse_args()
    args.pytstates, args.scenarios = os.path.abspath(args.pytstates), os.path.abspath(args.scenarios)
    archive = find_archive(args.archive_dir, "aarch64" if args.what == "aarch64" else None)
    if not archive:
        print("no %sportable archive in %s: run scripts/portable%s first (skipped, not passed)" % (
            "aarch64 " if args.what == "aarch64" else "", args.archive_dir, " --arch arm64" if args.what == "aarch64" else ""))
        return SKIP
    print("archive: %s (%.1f MiB)" % (archive, os.path.getsize(archive) / 2**20))
    work = tempfile.mkdtemp(prefix="pytstates-portable-")
    try:
        top = unpack(archive, work)
        if args.what == "bounds":
            bounds(top)
        elif args.what == "aarch64":
            aarch64(top, args.pytstates)
        elif args.what == "modules":
            modules(top, args.pytstates, args.scenarios, os.path.abspath(args.python314_dir))
        else:
            check(top, args.pytstates, args.scenarios)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
