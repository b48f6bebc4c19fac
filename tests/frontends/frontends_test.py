#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The front ends over libpytstates.so.0: gdb's commands through ctypes (PYTSTATES_CORE=ctypes)
give the CLI's report on a real core; the loader (pytstates/core.py) picks the pybind11 module
built for gdb's Python, and ctypes in a tree that has none; every _pytstates_core built
(PYTSTATES_PYTHON_MODULES) imports in its own pyenv Python, without gdb, and runs on a core to
the CLI's report."""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import json_contract  # noqa: E402
import scenario  # noqa: E402
from debugger_batch import as_json, between, gdb, marked  # noqa: E402
import pyenv  # noqa: E402
from findings_cases import expect  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def comparable(report):
    """What a debugger's report and the CLI's share on a core: everything (a core's thread numbers
    are the order of its notes in gdb and in the CLI alike) but target.process, the core's
    NT_PRPSINFO (command line, uid, gid, ppid), which no debugger hands over."""
    report = json.loads(json.dumps(report))
    report.get("target", {}).pop("process", None)
    return report


def seed_core():
    exe = os.path.join(ARGS.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr2", "pause"], "gcore")
    return exe, facts, core


def gdb_env(**extra):
    env = scenario.offline_env()
    env.pop("PYTSTATES_CORE", None)
    env.update(extra)
    return env


def run_gdb(script, target_args, commands, env):
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return gdb(script, target_args, commands)
    finally:
        os.environ.clear()
        os.environ.update(old)


def binding_command():
    return marked("binding", "python import pytstates.core as c; print('binding=%s' % (c.core.binding if c.core else 'none'))")


def binding_of(out):
    m = re.search(r"binding=(\w+)", between(out, "binding"))
    expect(m is not None, "the loader said which binding:\n" + out[-2000:])
    return m.group(1)


def differences(a, b, where=""):
    """The paths where two JSON values differ (for the message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k), b.get(k), where + "." + k)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, "%s[%d]" % (where, i))
        return out
    return [] if a == b else ["%s: %r != %r" % (where, a, b)]


def gdb_ctypes_core():
    """(a) py-tstates-check --json through ctypes == the CLI's check --json on a gcore'd core."""
    exe, facts, core = seed_core()
    try:
        env = gdb_env(PYTSTATES_CORE="ctypes")
        _, out = run_gdb(ARGS.gdb_entry, [exe, core], binding_command() + marked("json", "py-tstates-check --json"), env)
        expect(binding_of(out) == "ctypes", "PYTSTATES_CORE=ctypes: the ctypes binding")
        ours = as_json(between(out, "json"))
        status, cli, _ = scenario.run_pytstates(ARGS.pytstates, ["check", "--core", core, "--json"])
        expect(status == 1, "the CLI finds the seed's error")
        diff = differences(comparable(ours), comparable(cli))
        expect(not diff, "gdb through ctypes and the CLI report the same: %s" % diff[:10])
        stale = [(f["lwp"], f["tstate"]) for f in ours["findings"] if f["code"] == "stale-tstate"]
        expect(stale == [(facts["worker_lwp"], facts["deleted_tstate"])], "the stale pointer on the worker", ours)
        print("gdb (ctypes) == CLI: %d threads, %d findings" % (len(ours["threads"]), len(ours["findings"])))
    finally:
        scenario.cleanup(core)


def loader_pick():
    """(b) the pybind11 module where one matches gdb's Python, ctypes in a tree without one; a
    refused binding is one line, no traceback."""
    exe, _facts, core = seed_core()
    tree = tempfile.mkdtemp(prefix="pytstates-tree-")
    try:
        env = gdb_env()
        _, out = run_gdb(ARGS.gdb_entry, [exe, core], binding_command(), env)
        expect(binding_of(out) == "pybind11", "the build tree's module for gdb's Python is picked:\n" + out[-2000:])
        # The installed layout without any _pytstates_core: what a gdb whose Python no module was built for sees.
        build = ARGS.build_dir
        os.makedirs(os.path.join(tree, "lib", "pytstates", "python", "pytstates"))
        shutil.copy2(os.path.join(build, "lib", "pytstates", "libpytstates.so.0"), os.path.join(tree, "lib", "pytstates"))
        for f in glob.glob(os.path.join(build, "lib", "pytstates", "python", "pytstates", "*.py")):
            shutil.copy2(f, os.path.join(tree, "lib", "pytstates", "python", "pytstates"))
        shutil.copytree(os.path.join(build, "share"), os.path.join(tree, "share"))
        entry = os.path.join(tree, "share", "pytstates", "gdb", "pytstates.py")
        _, out = run_gdb(entry, [exe, core], binding_command() + marked("json", "py-tstates --json"), env)
        expect(binding_of(out) == "ctypes", "no module for gdb's Python: ctypes:\n" + out[-2000:])
        ours = as_json(between(out, "json"))
        _, cli, _ = scenario.run_pytstates(ARGS.pytstates, ["tstates", "--core", core, "--json"])
        diff = differences(comparable(ours), comparable(cli))
        expect(not diff, "py-tstates through ctypes == the CLI's tstates: %s" % diff[:10])
        # PYTSTATES_CORE=pybind11 in that tree: no binding at all, one line.
        _, out = run_gdb(entry, [exe, core], binding_command() + marked("refused", "py-tstates"), gdb_env(PYTSTATES_CORE="pybind11"))
        expect(binding_of(out) == "none", "PYTSTATES_CORE=pybind11 and no module: no binding")
        refused = between(out, "refused").strip()
        expect(len(refused.splitlines()) == 1 and refused.startswith("py-tstates: pytstates cannot run in gdb's Python")
               and "no pytstates module for this Python" in refused and "Traceback" not in out,
               "one line, no traceback: %r" % refused)
        print("loader: pybind11 in the build tree, ctypes without a module; refused: %s" % refused)
    finally:
        scenario.cleanup(core)
        shutil.rmtree(tree, ignore_errors=True)


CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
from pytstates.core import core, error
import core_target
if core is None:
    print(json.dumps({"error": error}))
    sys.exit(0)
status, output, err = core_target.run(core, sys.argv[3], "check", ["--json"])
print(json.dumps({"binding": core.binding, "built_for": core.built_for, "status": status, "output": output, "error": err}))
"""


def pyenv_python(tag):
    """pyenv's python for an ABI tag (311, 313t), or None."""
    m = re.match(r"^3(\d+)(t?)$", tag)
    root = pyenv.root()
    if root is None:
        print("NOT RUN: pyenv is not installed here (its CPythons run the other modules)")
        sys.exit(pyenv.NOT_RUN)
    for python in sorted(glob.glob(os.path.join(root, "versions", "3.%s.*" % m.group(1), "bin", "python3.%s%s" % (m.group(1), m.group(2))))):
        return python
    return None


def python_modules():
    """(c) every _pytstates_core built imports in its own Python (outside gdb) and `check` on a
    core through it gives the CLI's report; Python 3.6 (no module) through ctypes too."""
    package = os.path.join(ARGS.build_dir, "lib", "pytstates", "python")
    modules = sorted(glob.glob(os.path.join(package, "pytstates", "_pytstates_core.cpython-*.so")))
    tags = [re.search(r"cpython-(\d+t?)-", m).group(1) for m in modules]
    expect(tags, "at least the module for gdb's Python is built")
    exe, _facts, core = seed_core()
    try:
        status, cli, _ = scenario.run_pytstates(ARGS.pytstates, ["check", "--core", core, "--json"])
        runs = [(tag, pyenv_python(tag) if tag != ARGS.gdb_tag else "/usr/bin/python3.%s" % tag[1:], "pybind11") for tag in tags]
        runs.append(("36", pyenv_python("36"), "ctypes"))  # the oldest Python the package supports: no module, ctypes
        for tag, python, binding in runs:
            expect(python is not None, "a pyenv Python for the module cpython-%s (pyenv install 3.%s)" % (tag, tag[1:]))
            out = subprocess.run([python, "-c", CHILD, package, HERE, core], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=gdb_env(), universal_newlines=True, timeout=120)
            expect(out.returncode == 0, "%s ran: %s" % (python, out.stderr[-2000:]))
            got = json.loads(out.stdout)
            expect(got.get("binding") == binding, "%s loads %s: %s" % (python, binding, got.get("error")))
            expect(got["built_for"].startswith("3.%s." % tag[1:]), "%s: built for %s" % (python, got["built_for"]))
            expect(got["status"] == status, "%s: status %d (CLI %d): %s" % (python, got["status"], status, got["error"]))
            ours = json_contract.loads(got["output"])
            diff = differences(comparable(ours), comparable(cli))
            expect(not diff, "%s (%s) == the CLI: %s" % (python, binding, diff[:10]))
            print("python %s: %s binding, check == CLI (%d threads, %d findings)" % (got["built_for"], binding, len(ours["threads"]),
                                                                                 len(ours["findings"])))
    finally:
        scenario.cleanup(core)


# The root's own python3 with three threads of its own, each with a thread state, paused.
SLEEPER = r"""
import json, sys, threading, time
started = threading.Barrier(4)
def work():
    started.wait()
    time.sleep(600)
threads = [threading.Thread(target=work, name="worker-%d" % i, daemon=True) for i in range(3)]
for t in threads:
    t.start()
started.wait()
time.sleep(0.2)
print("FACTS " + json.dumps({"lwps": [t.native_id for t in threads]}))
print("READY")
sys.stdout.flush()
sys.stdin.readline()
"""


def lldb_python(target_args, commands):
    """lldb -b with share/pytstates/lldb/pytstates.py imported: its output."""
    entry = os.path.join(ARGS.build_dir, "share", "pytstates", "lldb", "pytstates.py")
    argv = [scenario.LLDB, "-b", "-o", "command script import " + entry]
    for c in commands:
        argv += ["-o", c]
    out = subprocess.run(argv + target_args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=180, env=gdb_env())
    return out.returncode, out.stdout.decode(errors="replace")


def lldb_json(text, command):
    marker = "(lldb) " + command
    expect(marker in text, "%s not in lldb's output:\n%s" % (marker, text[-3000:]))
    rest = text[text.index(marker) + len(marker):]
    start = rest.find("{")
    expect(start >= 0 and "Traceback" not in text, "a report, no traceback:\n" + text[-3000:])
    return json_contract.check(json.JSONDecoder().raw_decode(rest[start:])[0], "lldb's " + command)


def summary(report):
    """What a live process shows twice the same: its thread states by LWP, the findings' codes."""
    tstates = sorted((t.get("lwp"), t.get("address")) for r in report["runtimes"] for i in r["interpreters"] for t in i["tstates"])
    return tstates, sorted(f["code"] for f in report["findings"])


def root_lldb_core():
    """lldb-19's Python front end on a gcore'd core of python3: the CLI's check, field for field."""
    proc, facts = scenario.start(["/usr/bin/python3", "-c", SLEEPER])
    workdir = tempfile.mkdtemp(prefix="pytstates-lldb-")
    try:
        core = scenario.gcore(proc.pid, os.path.join(workdir, "core"))
        proc.kill()
        proc.wait()
        _, out = lldb_python(["--core", core, os.path.realpath("/usr/bin/python3")], ["py-tstates-check --json", "pybind-internals", "py-tstates"])
        ours = lldb_json(out, "py-tstates-check --json")
        status, cli, _ = scenario.run_pytstates(ARGS.pytstates, ["check", "--core", core, "--json"])
        diff = differences(comparable(ours), comparable(cli))
        expect(not diff, "lldb's Python front end and the CLI report the same: %s" % diff[:10])
        lwps = sorted(t["lwp"] for t in ours["threads"])
        expect(set(facts["lwps"]) <= set(lwps), "the workers' LWPs %s among %s" % (facts["lwps"], lwps))
        print("lldb (%s) on a core of python3: == CLI, %d threads, %d thread states, status %d" % (
            subprocess.run([scenario.LLDB, "--version"], stdout=subprocess.PIPE, universal_newlines=True).stdout.split("\n")[0],
            len(ours["threads"]), len(summary(ours)[0]), status))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def root_lldb_live():
    """lldb-19's Python front end attached to a live python3: the thread states and findings the
    CLI's --pid gives, and the process runs on after both."""
    proc, facts = scenario.start(["/usr/bin/python3", "-c", SLEEPER])
    try:
        _, out = lldb_python(["-p", str(proc.pid)], ["py-tstates-check --json", "process detach"])
        ours = lldb_json(out, "py-tstates-check --json")
        _, cli, _ = scenario.run_pytstates(ARGS.pytstates, ["check", "--pid", str(proc.pid), "--json"])
        expect(summary(ours) == summary(cli), "lldb live == CLI --pid: %s vs %s" % (summary(ours), summary(cli)))
        expect(set(facts["lwps"]) <= set(t for t, _ in summary(ours)[0]), "every worker has its thread state", ours)
        expect(proc.poll() is None, "python3 runs on after lldb detached")
        print("lldb on live python3 (pid %d): %d thread states, findings %s, as the CLI" % (proc.pid, len(summary(ours)[0]), summary(ours)[1]))
    finally:
        proc.kill()
        proc.wait()


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--build-dir", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--gdb-tag", required=True, help="the ABI tag of gdb's Python (311)")
    p.add_argument("case")
    ARGS = p.parse_args()
    ARGS.gdb_entry = os.path.join(ARGS.build_dir, "share", "pytstates", "gdb", "pytstates.py")
    {"gdb-ctypes-core": gdb_ctypes_core, "loader-pick": loader_pick, "python-modules": python_modules,
     "root.lldb-core": root_lldb_core, "root.lldb-live": root_lldb_live}[ARGS.case]()


if __name__ == "__main__":
    main()
