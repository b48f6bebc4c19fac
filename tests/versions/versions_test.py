#!/usr/bin/env python3
"""Every CPython from 3.8 to 3.14, with and without debug info, on real binaries and real cores:
tests/scenarios/live/threads_gil.py run by the interpreter, a core taken (gcore; the kernel's for
3.14, whose glibc 2.43 threads gcore cannot dump), and `pytstates tstates --json` held against
what the script printed. Modes:
  dwarf    as installed (pyenv: DWARF in libpython; Debian: python3.11-dbg's debug files)
  nodwarf  --no-dwarf: layouts from _Py_DebugOffsets (3.13+) or the built-in tables
  strip-g  libpython copied and stripped with `strip -g`, loaded through LD_LIBRARY_PATH
  strip-s  the same with `strip -s` (no .symtab: 3.12+ find _Py_tss_tstate from code)"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from findings_cases import expect, pyenv_libpython  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "scenarios", "live", "threads_gil.py")


def interpreter(args, name, workdir):
    """(argv prefix, env, extra pytstates args, core kind, expected module path or None)."""
    if name == "debian":
        return ["/usr/bin/python3.11"], None, [], "gcore", "/usr/bin/python3.11"
    if name == "debian-dbg":
        return ["/usr/bin/python3.11d"], None, [], "gcore", "/usr/bin/python3.11d"
    if name == "3.14":
        root = subprocess.run([os.path.join(HERE, "..", "..", "scripts", "python314"), args.python314_dir],
                              stdout=subprocess.PIPE, check=True).stdout.decode().strip()
        lib = os.path.join(root, "usr/lib/x86_64-linux-gnu")
        env = dict(os.environ, PYTHONHOME=os.path.join(root, "usr"))
        return ([os.path.join(lib, "ld-linux-x86-64.so.2"), "--library-path", lib, os.path.join(root, "usr/bin/python3.14")],
                env, ["--sysroot", root], "kernel", None)
    libpython = pyenv_libpython(name)
    prefix = os.path.dirname(os.path.dirname(libpython))
    minor = ".".join(name.split(".")[:2])
    python = os.path.join(prefix, "bin", "python" + minor)
    expect(os.path.exists(python), "pyenv's CPython %s has no %s" % (name, python))
    env = None
    module = libpython
    if args.mode.startswith("strip-"):
        copy = os.path.join(workdir, "lib")
        os.makedirs(copy)
        module = os.path.join(copy, os.path.basename(libpython))
        shutil.copy2(libpython, module)
        subprocess.run(["strip", "-" + args.mode[-1], module], check=True)
        env = dict(os.environ, LD_LIBRARY_PATH=copy)
    return [python], env, [], "gcore", module


def expected_layout(name, mode):
    if mode == "dwarf" and name != "3.14":
        return "dwarf"
    minor = 14 if name == "3.14" else int(name.split(".")[1]) if name[0].isdigit() else 11
    return "debug_offsets" if minor >= 13 else "table"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--python314-dir", required=True)
    p.add_argument("interpreter", help="3.8.18 ... 3.13.0 (pyenv), debian, debian-dbg, 3.14")
    p.add_argument("mode", choices=["dwarf", "nodwarf", "strip-g", "strip-s"])
    args = p.parse_args()
    workdir = tempfile.mkdtemp(prefix="pytstates-versions-")
    try:
        argv, env, extra, kind, module = interpreter(args, args.interpreter, workdir)
        facts, core = scenario.take_core(argv + [SCRIPT], kind, env=env)
        try:
            flags = ["--frames", "12"] + extra + (["--no-dwarf"] if args.mode == "nodwarf" else [])
            status, r, err = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--json"] + flags)
            expect(status == 0, "pytstates exited %d: %s" % (status, err), r)
            check(args, facts, r, module)
        finally:
            scenario.cleanup(core)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("PASS %s %s (layout %s)" % (args.interpreter, args.mode, r["runtimes"][0]["layout"]))


def check(args, facts, r, module):
    expect(len(r["runtimes"]) == 1, "exactly one runtime", r)
    rt = r["runtimes"][0]
    expect(rt["version"] == facts["version"], "version %s" % facts["version"], r)
    if module:
        expect(rt["module"] == module, "the runtime lives in %s" % module, r)
    expect(rt["layout"] == expected_layout(args.interpreter, args.mode), "layout source %s" % expected_layout(args.interpreter, args.mode), r)
    expect(not [n for n in rt.get("notes", []) if n.startswith("layout:")], "no layout source contradicts another", r)
    expect(len(rt["interpreters"]) == 1, "one interpreter", r)
    interp = rt["interpreters"][0]
    ts = {t["address"]: t for t in interp["tstates"]}
    holder = [t for t in facts["threads"] if t["lwp"] == facts["gil_holder_lwp"]][0]
    expect(interp["gil_holder"] == holder["tstate"], "the GIL holder", r)
    newer = tuple(int(x) for x in facts["version"].split(".")[:2]) >= (3, 11)
    rows = {row["lwp"]: row for row in r["threads"]}
    for t in facts["threads"]:
        got = ts.get(t["tstate"])
        expect(got is not None, "tstate %s listed" % t["tstate"], r)
        expect(got["lwp"] == t["lwp"] and got["thread_id"] == t["pthread"], "LWP and thread_id of %s" % t["tstate"], r)
        expect(got["native_thread_id"] == (t["lwp"] if newer else None), "native_thread_id of %s" % t["tstate"], r)
        expect(got["holds_gil"] == (t is holder), "holds_gil of %s" % t["tstate"], r)
        frames = [(f["function"], os.path.basename(f["file"]), f["line"]) for f in got["frames"]]
        want = (t["function"], t["file"], t["line"])
        if t is holder:
            expect(frames[:1] == [want], "the holder's top frame %s" % (want,), r)
        else:
            expect(want in frames, "LWP %d waits in %s" % (t["lwp"], want), r)
        row = rows[t["lwp"]]
        expect(row["autotss_tstate"] == t["autotss"], "autoTSSkey slot of LWP %d" % t["lwp"], r)
        expect(row["current_tstate"] == (t["tstate"] if t is holder else None), "current tstate of LWP %d" % t["lwp"], r)


if __name__ == "__main__":
    main()
