#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pytstates on the binding scenarios (tests/scenarios/bindings/run.py): real pybind11 2.10.3,
2.13.6 and 3.1.x modules and a nanobind 2.x module in one process, for one Python.

Held against what each module printed about its own record (FACTS), and, for cores, against what
gdb reads through each module's own DWARF in the same core: the record its holder static points
to, that record's key and istate, nanobind's internals pointer, the module an address lies in.

  bindings_test.py --pytstates P --python PY --modules DIR MODE KIND
  bindings_test.py --pytstates P --interpreter 3.15|3.13t [--python315-dir DIR] MODE KIND
  MODE: mixed | stale | subinterp     KIND: gcore | kernel | live

--interpreter builds the pybind11 2.13 and 3.1 modules for Debian's unstable python3.15 (run
through its own ld.so and glibc: kernel cores only, gcore dumps its threads' stacks as zeros) or
the free-threaded 3.13t (scripts/python-freethreaded), here, before the scenario runs."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
sys.path.insert(0, os.path.join(here, "..", "findings"))
import pyenv  # noqa: E402
import scenario  # noqa: E402
from bad_input import patch  # noqa: E402
from findings_cases import expect, findings  # noqa: E402

RUN = os.path.join(here, "..", "scenarios", "bindings", "run.py")

# The static each release keeps its record in (.symtab names), and a function gdb knows by its
# DWARF name in the same module, whose address gives the module's load bias.
HOLDERS = {
    "pybind11-2": "_ZZN8pybind116detail16get_internals_ppEvE12internals_pp",
    "pybind11-3": "_ZZN8pybind116detail20internals_pp_managerINS0_9internalsEE12get_instanceEPKcPFvPS2_EE8instance",
    "nanobind": "_ZN8nanobind6detail9internalsE",
}
ANCHORS = {
    "pybind11-2": ("_ZN8pybind116detail13get_internalsEv", "pybind11::detail::get_internals"),
    "pybind11-3": ("_ZN8pybind116detail13get_internalsEv", "pybind11::detail::get_internals"),
    "nanobind": ("_ZN8nanobind6detail9internalsE", "nanobind::detail::internals"),
}


def symtab(path):
    out = subprocess.run(["nm", path], stdout=subprocess.PIPE, check=True).stdout.decode()
    return {p[2]: int(p[0], 16) for p in (line.split() for line in out.splitlines()) if len(p) == 3}


def gdb_records(python, core, modules, addresses):
    """{module path: {record, key, istate}} and {address: the library gdb says it lies in}."""
    spec = {}
    for path, kind in modules.items():
        syms = symtab(path)
        spec[path] = {"kind": kind, "holder": syms[HOLDERS[kind]], "anchor": syms[ANCHORS[kind][0]],
                      "anchor_name": ANCHORS[kind][1]}
    env = dict(os.environ, PYTSTATES_GDB_INPUT=json.dumps(spec))
    commands = ["-ex", "set debuginfod enabled off", "-ex", "core-file " + core,
                "-x", os.path.join(here, "gdb_records.py")]
    for a in addresses:
        commands += ["-ex", "python print('GDB-SOLIB %s %%s' %% gdb.current_progspace().solib_name(%s))" % (a, a)]
    out = subprocess.run(["gdb", "-batch", "-nx"] + commands + [python], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, timeout=300).stdout.decode(errors="replace")
    m = re.search(r"^GDB-RECORDS (.*)$", out, re.M)
    expect(m is not None, "gdb read no records:\n" + out[-3000:])
    solibs = {a: os.path.realpath(s) for a, s in re.findall(r"^GDB-SOLIB (\S+) (.*)$", out, re.M)}
    return json.loads(m.group(1)), solibs


def record_of(report, record_id, address):
    hits = [r for r in report["internals"] if r["id"] == record_id and int(r["address"], 16) == int(address, 16)]
    expect(len(hits) == 1, "one record %s at %s" % (record_id, address), report)
    return hits[0]


def values(record):
    return {v["lwp"]: int(v["tstate"], 16) for v in record["tls_values"]}


def evidence(record, path):
    """What confirms `path` as a user of the record ("" when nothing does)."""
    return "".join(c["evidence"] for c in record["confirmed_by"] if c["module"] == path)


def pybind11_modules(facts):
    return {name: m for name, m in facts["modules"].items() if "missing" not in m}


def check_records(facts, r):
    """Every module's record as the module itself sees it: id, address, key, confirmed user."""
    for name, m in pybind11_modules(facts).items():
        rec = record_of(r, m["id"], m["internals"])
        expect(rec["tls_key"] == m["key"], "%s: key %d, as the module reads it" % (name, m["key"]), r)
        holder = "internals_pp_manager" if m["version"].startswith("3.") else "get_internals_pp static"
        expect(holder in evidence(rec, m["path"]), "%s confirmed as a user of %s by its %s" % (name, m["id"], holder), r)
        for other in r["internals"]:
            if other is not rec:
                expect(m["path"] not in other["modules_confirmed"], "%s is a confirmed user of its own record only" % name, r)
    expect(all("module_local" not in rec["id"] for rec in r["internals"]), "no module-local capsule counted as a record", r)


def check_module_locals(facts, r):
    expected = {m["module_local"]: m["path"] for m in pybind11_modules(facts).values() if "module_local" in m}
    got = {ml["id"]: ml["module"] for ml in r["module_locals"]}
    expect(got == expected, "module-local records %s, each with the module that made it" % expected, r)


def check_mixed(facts, r, status):
    mods = pybind11_modules(facts)
    ids = {m["id"] for m in mods.values()}
    expect(len(r["internals"]) == len(ids), "%d records, one per distinct ID" % len(ids), r)
    check_records(facts, r)
    check_module_locals(facts, r)
    main = facts["main_lwp"]
    for rec in r["internals"]:
        users = [m for m in mods.values() if m["id"] == rec["id"]]
        want = {m["worker"]["lwp"]: int(m["worker"]["tstate"], 16) for m in users}
        if rec["version"] <= 11:  # records made before 3.0.2 seed the key of the thread that made them
            want[main] = int(facts["main_tstate"], 16)
        expect(values(rec) == want, "%s: per-thread values %s" % (rec["id"], {k: hex(v) for k, v in want.items()}), r)
    typed = r["with_types"]
    pb_types = {t["python"] for rec in typed["internals"] for t in rec["types"]}
    expect(pb_types == {name + ".Widget" for name in mods}, "pybind11 types: each module's Widget in its record", r)
    if "nanobind" in facts:
        check_nanobind(facts, r)
    errors = [f for f in r["findings"] if f["severity"] == "error"]
    expect(status == facts["quiet_status"] and not errors, "no errors (each thread's caches name its own thread state)", r)
    splits = findings(r, "internals-split", "warning")
    expect(len(splits) == 1, "one internals-split", r)
    versions = sorted({rec["version"] for rec in r["internals"]})
    expect("different pybind11 releases (internals v%d and v%d)" % tuple(versions) in splits[0]["message"]
           and "-fabi-version" not in splits[0]["message"],
           "the split is explained as two pybind11 releases, not a compiler flag", r)


def check_nanobind(facts, r):
    nb = facts["nanobind"]
    expect(len(r["nanobind"]) == 1, "one nanobind record", r)
    rec = r["nanobind"][0]
    expect(rec["abi_tag"] == nb["abi_tag"] and "nanobind::detail::internals static" in evidence(rec, nb["path"]),
           "nanobind's record: ABI tag %s, used by nbm (confirmed)" % nb["abi_tag"], r)
    typed = r["with_types"]
    expect({"python": "nbm.Gadget", "cpp": "(anonymous namespace)::Gadget"} in typed["nanobind"][0]["types"],
           "nanobind types name nbm.Gadget", typed)


def check_stale(facts, r, status):
    check_records(facts, r)
    check_module_locals(facts, r)
    st = facts["stale"]
    deleted = int(st["deleted_tstate"], 16)
    stale_rec = [rec for rec in r["internals"] if rec["id"] == st["stale_id"]][0]
    expect(stale_rec["tls_key"] == st["stale_key"] and values(stale_rec).get(st["worker_lwp"]) == deleted,
           "the 2.13 record's key %d holds the deleted thread state on the worker" % st["stale_key"], r)
    hits = findings(r, "stale-tstate", "error")
    expect(status == 1 and len(hits) == 1, "exactly one stale-tstate", r)
    f = hits[0]
    expect(f["lwp"] == st["worker_lwp"] and int(f["tstate"], 16) == deleted, "stale-tstate names the worker and the deleted thread state", r)
    expect(f["sources"] == ["pybind11 key %d (%s)" % (st["stale_key"], st["stale_id"])], "its one source is the 2.13 record's key", r)
    # A GIL build's thread state fits the tcache; a free-threaded one (_PyThreadStateImpl) goes to a bin.
    evidence = "malloc chunk is free" if r["runtimes"][0]["free_threaded"] else "glibc tcache free-list entry"
    expect(evidence + " (" in f["message"] or evidence + ":" in f["message"], "the evidence: " + evidence, r)
    said = "it was freed" if r["runtimes"][0]["free_threaded"] else "it was likely freed"  # a chunk marked free vs its first bytes
    expect(said in f["message"], "the memory: " + said, r)
    expect(len(findings(r, "internals-split", "warning")) == 1, "the split of the two releases is reported", r)


def check_subinterp(facts, r, status):
    check_records(facts, r)
    check_module_locals(facts, r)
    sub = facts["sub"]
    by_interp = {int(rec["interpreter"], 16): rec for rec in r["internals"]}
    expect(len(r["internals"]) == 3 and len(by_interp) == 3, "three records: main, the sub-interpreter, the idle one", r)
    rec = by_interp.get(int(sub["interp"], 16))
    expect(rec is not None and rec["tls_key"] == sub["key"] and values(rec) == {sub["lwp"]: int(sub["tstate"], 16)},
           "the sub-interpreter's record: key %d, the worker's thread state" % sub["key"], r)
    idle = by_interp.get(int(facts["idle"]["interp"], 16))
    expect(idle is not None and not idle["tls_values"], "the idle sub-interpreter's record caches nothing", r)
    expect(status == facts["quiet_status"] and not r["findings"], "no findings (one release; 3.1 seeds no key)", r)


def reset_initial(args, facts, core, r):
    """The idle sub-interpreter's initial thread state, reset in place by create(), put in the
    main thread's slot of that interpreter's record: what pybind11 3.0.0-3.0.1's create() leaves."""
    sub, idle = facts["sub"], facts["idle"]
    offset = int(sub["tstate"], 16) - int(sub["interp"], 16)  # the worker runs on the sub's initial thread state
    expect(0 < offset < 1 << 20, "the sub-interpreter's worker uses its built-in initial thread state", r)
    initial = int(idle["interp"], 16) + offset
    rec = [x for x in r["internals"] if int(x["interpreter"], 16) == int(idle["interp"], 16)][0]
    main = [t for t in r["threads"] if t["lwp"] == facts["main_lwp"]][0]
    out = subprocess.run(["gdb", "-q", "-batch", "-nx", "-ex",
                          "print/x &((struct pthread*)%s)->specific_1stblock[%d].data" % (main["pthread"], rec["tls_key"]),
                          args.python, core], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode()
    m = re.search(r"^\$1 = (0x[0-9a-f]+)", out, re.M)
    expect(m is not None, "gdb gives the main thread's slot of key %d (libc6-dbg):\n%s" % (rec["tls_key"], out[-2000:]))
    patch(core, int(m.group(1), 16), initial)
    status, p, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
    hits = findings(p, "stale-tstate", "error")
    expect(status == 1 and len(hits) == 1 and hits[0]["lwp"] == facts["main_lwp"] and int(hits[0]["tstate"], 16) == initial,
           "one stale-tstate: the main thread's key names the idle interpreter's initial thread state", p)
    msg = hits[0]["message"]
    expect("reset to empty" in msg and "inside the state of interpreter %s" % hex(int(idle["interp"], 16)) in msg,
           "the evidence: reset to empty, inside the idle interpreter's state", p)
    expect("freed" not in msg and "reused" not in msg, "no freed or reused claimed for memory that was reset", p)
    expect("subinterpreter::create()" in msg, "the cause names the built-in initial thread state's deletion", p)


def gdb_cross_check(args, facts, core, r):
    modules = {m["path"]: ("pybind11-3" if m["version"].startswith("3.") else "pybind11-2")
               for m in pybind11_modules(facts).values()}
    if "nanobind" in facts:
        modules[facts["nanobind"]["path"]] = "nanobind"
    owners = {int(ml["id"].rsplit("__", 1)[1]) for ml in r["module_locals"]}
    seen, solibs = gdb_records(args.python, core, modules, sorted(hex(a) for a in owners))
    for path, kind in modules.items():
        g = seen[path]
        expect("error" not in g, "gdb read %s's record: %s" % (path, g.get("error")))
        if kind == "nanobind":
            expect([int(x["address"], 16) for x in r["nanobind"]] == [g["record"]], "nanobind's record where gdb reads it", r)
            continue
        hits = [rec for rec in r["internals"] if int(rec["address"], 16) == g["record"]]
        expect(len(hits) == 1, "%s: a record at %#x, where gdb reads its holder" % (path, g["record"]), r)
        rec = hits[0]
        expect(rec["tls_key"] == g["key"] and int(rec["istate"], 16) == g["istate"] and path in rec["modules_confirmed"],
               "%s: key %d and istate %#x as gdb reads them from DWARF" % (path, g["key"], g["istate"]), r)
        print("gdb and pytstates agree: %s -> record %#x, key %d, istate %#x" % (os.path.basename(path), g["record"], g["key"], g["istate"]))
    for ml in r["module_locals"]:
        address = hex(int(ml["id"].rsplit("__", 1)[1]))
        expect(solibs.get(address) == ml["module"], "module-local %s: gdb puts %s in %s" % (ml["id"], address, solibs.get(address)), r)


def no_dwarf(args, target, r):
    """--no-dwarf with the cache off, then with a cache a DWARF run has just filled: what the cache
    holds are DWARF's answers, and --no-dwarf takes none of them."""
    cache = tempfile.mkdtemp(prefix="pytstates-cache-")
    warm = dict(scenario.offline_env(), XDG_CACHE_HOME=cache)
    warm.pop("PYTSTATES_NO_CACHE", None)
    try:
        _, w, _ = scenario.run_pytstates(args.pytstates, ["check", "--json"] + target, env=warm)
        entries = os.listdir(os.path.join(cache, "pytstates", "dwarf"))
        expect(any(rec["layout"] == "dwarf" for rec in w["internals"]) and entries,
               "a DWARF run filled the cache (%d entries) with the records' layouts" % len(entries), w)
        for env, cached in ((None, "off"), (warm, "warm")):
            status, n, _ = scenario.run_pytstates(args.pytstates, ["check", "--json", "--no-dwarf"] + target, env=env)
            expect(all(rec["layout"] in ("table", "anchor") for rec in n["internals"]),
                   "--no-dwarf, the cache %s: pybind11 layouts from the published tables" % cached, n)
            expect(all(rt["layout"] in ("table", "debug_offsets") and not rt["layout_cached"] and
                       "dwarf" not in rt["layout_sources"].values() for rt in n["runtimes"]),
                   "--no-dwarf, the cache %s: CPython's layout from a table or _Py_DebugOffsets" % cached, n["runtimes"])
            strip = lambda rep: sorted(json.dumps([rec["address"], rec["tls_key"], rec["tls_values"], rec["modules_confirmed"]]) for rec in rep["internals"])
            expect(strip(n) == strip(r), "--no-dwarf, the cache %s: the same records, keys and values" % cached, n)
            if r["nanobind"]:
                _, t, _ = scenario.run_pytstates(args.pytstates, ["internals", "--json", "--types", "--no-dwarf"] + target,
                                                 expect_status=scenario.quiet_status(args.kind), env=env)
                expect([x["types"] for x in t["nanobind"]] == [x["types"] for x in r["with_types"]["nanobind"]]
                       and all(x["types_layout"] == "table" for x in t["nanobind"]),
                       "--no-dwarf, the cache %s: nanobind's types from the published layout, the same as with DWARF" % cached, t)
        print("--no-dwarf with the cache off and warm (%d entries): layouts %s" % (
            len(entries), sorted({rec["layout"] for rec in n["internals"]})))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


CHECKS = {"mixed": check_mixed, "stale": check_stale, "subinterp": check_subinterp}

TOP = os.path.abspath(os.path.join(here, "..", ".."))
BINDINGS = os.path.join(TOP, "build", "bindings")  # --bindings overrides


def prepare_interpreter(args, workdir):
    """Sets args.python (the program gdb is given), and returns (argv prefix, environment, kind
    override) for --interpreter, after building the modules for it into args.modules."""
    env = dict(scenario.offline_env())
    if args.interpreter == "3.15":
        out = subprocess.run([os.path.join(TOP, "scripts", "debian-python"), "3.15", args.python315_dir],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        expect(out.returncode == 0, "Debian's python3.15 is not available: " + out.stderr.decode(errors="replace"))
        root = out.stdout.decode().strip().splitlines()[-1]
        args.python = os.path.join(root, "usr", "bin", "python3.15")
        prefix = [os.path.join(root, "lib64", "ld-linux-x86-64.so.2"), "--library-path", os.path.join(root, "lib", "x86_64-linux-gnu"), args.python]
        env["PYTHONHOME"] = os.path.join(root, "usr")
        # Its own headers, but this machine's C library headers before the tree's.
        includes = ["-I" + os.path.join(root, "usr", "include", "python3.15"), "-idirafter", os.path.join(root, "usr", "include")]
        suffix, kind = ".cpython-315-x86_64-linux-gnu.so", "kernel"
    else:
        out = subprocess.run([os.path.join(TOP, "scripts", "python-freethreaded"), "3.13"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        expect(out.returncode == 0, "the free-threaded CPython 3.13t cannot be built: " + out.stderr.decode(errors="replace"))
        root = out.stdout.decode().strip().splitlines()[-1]
        args.python = os.path.join(root, "bin", "python3.13t")
        prefix = [args.python]
        includes = ["-I" + os.path.join(root, "include", "python3.13t")]
        suffix, kind = ".cpython-313t-x86_64-linux-gnu.so", None
    args.modules = os.path.join(workdir, "modules")
    os.makedirs(args.modules)
    builds = []
    for name, release in (("pb213", "pybind11-2.13"), ("pb31", "pybind11-3.1")):
        cmd = ["g++", "-std=c++17", "-shared", "-fPIC", "-O1", "-g", "-fvisibility=hidden", "-w",
               "-I" + os.path.join(args.bindings, release, "usr", "include")] + includes + [
               "-DMODULE_NAME=" + name, "-o", os.path.join(args.modules, name + suffix),
               os.path.join(TOP, "tests", "scenarios", "bindings", "pb_module.cpp")]
        builds.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    for b in builds:
        out, _ = b.communicate(timeout=600)
        expect(b.returncode == 0, "building a binding module failed:\n" + out.decode(errors="replace")[-3000:])
    return prefix, env, kind


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--python")
    p.add_argument("--modules", help="the directory of the modules built for this Python")
    p.add_argument("--interpreter", choices=["3.15", "3.13t"])
    p.add_argument("--python315-dir", default=os.path.join(TOP, "build", "python315"))
    p.add_argument("--bindings", default=BINDINGS, help="where scripts/binding-releases put the pybind11 releases")
    p.add_argument("mode", choices=sorted(CHECKS))
    p.add_argument("kind", choices=["gcore", "kernel", "live"])
    args = p.parse_args()
    if args.python and not os.path.exists(args.python):
        # Debian 12's python3.11 (a Debian 13 machine has none) or pyenv's 3.12.1 / 3.13.0: the
        # modules for it were not built either (tests/scenarios/bindings said so at configure time).
        pyenv.not_run("%s (%s) is not installed here; its binding modules were not built" % (
            args.python, "Debian 12's python3.11" if args.python == "/usr/bin/python3.11" else "pyenv's CPython"))
    workdir = tempfile.mkdtemp(prefix="pytstates-bindings-")
    prefix, env = [args.python], None
    if args.interpreter:
        prefix, env, kind = prepare_interpreter(args, workdir)
        if kind and args.kind == "gcore":
            args.kind = kind
    argv = prefix + [RUN, args.modules, args.mode]

    def run(target, facts):
        status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--json"] + target)
        expect(status in (0, 1), "pytstates exited %d: %s" % (status, err))
        # a kernel core (SIGABRT) is a CRASH: exit status 1 with no finding (scenario.quiet_status)
        facts["quiet_status"] = scenario.quiet_status(args.kind)
        _, r["with_types"], _ = scenario.run_pytstates(args.pytstates, ["internals", "--json", "--types"] + target,
                                                       expect_status=facts["quiet_status"])
        main_ts = [ts for rt in r["runtimes"] for i in rt["interpreters"] for ts in i["tstates"] if ts.get("lwp") == facts["main_lwp"]]
        facts["main_tstate"] = main_ts[0]["address"] if main_ts else "0x0"
        if args.interpreter == "3.13t":
            rt = r["runtimes"][0]
            expect(rt["free_threaded"] and all(i["gil"] == "disabled" for i in rt["interpreters"]),
                   "a free-threaded runtime still without a GIL (every module declares Py_mod_gil_not_used)", r)
        CHECKS[args.mode](facts, r, status)
        no_dwarf(args, target, r)
        return r

    try:
        drive(args, argv, env, run)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("PASS bindings %s %s (%s)" % (args.mode, args.kind, args.python))


def drive(args, argv, env, run):
    if args.kind == "live":
        with scenario.running(argv, env=env) as (proc, facts):
            run(["--pid", str(proc.pid)], facts)
            expect(scenario.still_answers(proc), "the process goes on after pytstates detached")
    else:
        facts, core = scenario.take_core(argv, args.kind, env=env)
        try:
            r = run(["--core", core], facts)
            gdb_cross_check(args, facts, core, r)
            # The patch needs glibc's struct pthread from libc6-dbg: this machine's glibc only.
            if args.mode == "subinterp" and args.interpreter != "3.15":
                reset_initial(args, facts, core, r)
        finally:
            scenario.cleanup(core)


if __name__ == "__main__":
    main()
