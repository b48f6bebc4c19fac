#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ObjectReader and FrameReader's locals on a real core of one CPython (objects_program.py).

Usage: objects_test.py --probe OBJECT_PROBE [--python314-dir D] [--python315-dir D] [--no-dwarf] INTERPRETER
  --no-dwarf: the layout from _Py_DebugOffsets and the built-in tables only (as without debug packages).
  INTERPRETER: debian (the suite's python3, also checked against gdb's py-locals from
  python3.X-dbg's libpython gdb script, or where that cannot read the frame, against gdb's
  Python API through CPython's DWARF: locals_facts.gdb_waiter_locals), a pyenv version
  (3.8.18 ... 3.13.0, under `pyenv root`), 3.14 or 3.15 (Debian unstable's, scripts/debian-python), 3.13t (free-threaded,
  scripts/python-freethreaded).

Truth: what the program printed about its own objects (id(), repr()) and, for debian, gdb. Every
instance attribute, scalar, container item, the module global, the waiting frame's args/locals/
cell, a suspended coroutine's and generator's frame and what each delegates to.
Exit 0 when all agree, 1 with each difference, 77 (not a pass) when the interpreter is missing.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import locals_facts  # noqa: E402
import scenario  # noqa: E402

SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
PROGRAM = os.path.join(HERE, "objects_program.py")


class Missing(Exception):
    pass


def interpreter(name, args):
    """argv and environment that run a Python program under this interpreter."""
    env = dict(os.environ)
    env.pop("PYTHONHOME", None)
    if name == "debian":
        return [scenario.PYTHON], env
    if name in ("3.13t", "3.14t"):  # free-threaded, built once from Debian's source (a cold cache: minutes)
        out = subprocess.run([os.path.join(SOURCE, "scripts", "python-freethreaded"), name[:-1]],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise Missing("a free-threaded CPython %s cannot be built here: %s"
                          % (name, out.stderr.decode(errors="replace").strip()))
        prefix = out.stdout.decode().strip().splitlines()[-1]
        return [os.path.join(prefix, "bin", "python" + name)], env
    if name in ("3.14", "3.15"):
        cache = args.python314_dir if name == "3.14" else args.python315_dir
        out = subprocess.run([os.path.join(SOURCE, "scripts", "debian-python"), name, cache],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise Missing("CPython %s from Debian's unstable suite is not available: %s"
                          % (name, out.stderr.decode(errors="replace").strip()))
        root = out.stdout.decode().strip().splitlines()[-1]
        env["PYTHONHOME"] = os.path.join(root, "usr")
        return [os.path.join(root, "lib64", "ld-linux-x86-64.so.2"), "--library-path",
                os.path.join(root, "lib", "x86_64-linux-gnu"), os.path.join(root, "usr", "bin", "python" + name)], env
    try:
        root = os.environ.get("PYENV_ROOT") or subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE,
                                                              check=True).stdout.decode().strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise Missing("pyenv is not installed: %s" % e)
    python = os.path.join(root, "versions", name, "bin", "python3")
    if not os.path.exists(python):
        raise Missing("pyenv's CPython %s is missing: no %s" % (name, python))
    return [python], env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--python314-dir", default="")
    ap.add_argument("--python315-dir", default="")
    ap.add_argument("--no-dwarf", action="store_true")
    ap.add_argument("interpreter")
    args = ap.parse_args()
    try:
        argv, env = interpreter(args.interpreter, args)
    except Missing as e:
        print("NOT RUN (not a pass): %s" % e)
        return 77
    work = tempfile.mkdtemp(prefix="pytstates-objects-")
    try:
        return check(args, argv, env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check(args, argv, env, work):
    started = time.monotonic()
    proc = subprocess.Popen(argv + [PROGRAM], stdout=subprocess.PIPE, env=env, start_new_session=True)
    try:
        facts = scenario.read_facts(proc, time.monotonic() + 60, who="objects_program.py")
        core = scenario.gcore(proc.pid, os.path.join(work, "core"))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    probe = [args.probe] + (["--no-dwarf"] if args.no_dwarf else []) + [core]
    for o in facts["objects"].values():
        probe += ["object", str(o["id"])]
    for s in facts["scalars"]:
        probe += ["object", str(s["id"])]
    probe += ["global", "__main__", "GLOBAL_COUNTER", "gen", str(facts["gen"]), "gen", str(facts["coro"])]
    out = subprocess.run(probe, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if out.returncode != 0:
        print("object_probe failed (%d): %s" % (out.returncode, out.stderr.decode(errors="replace")))
        return 1
    got = json.loads(out.stdout)
    bad = []
    checked = 0

    def expect(what, want, have):
        nonlocal checked
        checked += 1
        if want != have:
            bad.append("%s: the program says %r, pytstates read %r" % (what, want, have))

    print("CPython %s (layout from %s)" % (got["version"], got["layout_source"]))
    objs = got["objects"]
    for key, o in facts["objects"].items():
        g = objs.get("%#x" % o["id"], {})
        if "attributes" in o:
            expect(key + " type", o["type"], g.get("type"))
            expect(key + " attributes", o["attributes"], g.get("attributes"))
        else:
            items = g.get(key)
            if key == "set" and items is not None:
                items = sorted(items)
            expect(key + " items", o["items"], items)
    for s in facts["scalars"]:
        expect("scalar %#x" % s["id"], s["repr"], objs.get("%#x" % s["id"], {}).get("repr"))
    expect("__main__.GLOBAL_COUNTER", "%#x" % facts["global_counter"], got["globals"].get("__main__.GLOBAL_COUNTER"))
    gens = got["generators"]
    gen, coro = gens.get("%#x" % facts["gen"], {}), gens.get("%#x" % facts["coro"], {})
    expect("generator's function", "gen_outer", gen.get("function"))
    expect("generator's locals", {"gen_local": "99"}, gen.get("locals"))
    expect("generator's yield from", "%#x" % facts["gen_yieldfrom"], gen.get("yield_from"))
    expect("coroutine's function", "outer_coro", coro.get("function"))
    expect("coroutine's local", "'coro-local'", (coro.get("locals") or {}).get("local_in_coro"))
    expect("coroutine's await", "%#x" % facts["coro_await"], coro.get("yield_from"))
    # <= 3.10 thread states record no native thread id: the one thread is the program's.
    thread = next((t for t in got["threads"] if t["native_thread_id"] in (facts["thread"], None)), None)
    frame = next((f for f in (thread or {}).get("frames", []) if f["function"] == "waiter"), None)
    if frame is None:
        bad.append("no waiter frame on thread %d" % facts["thread"])
    else:
        mine = {l["name"]: l["repr"] for l in frame["locals"] if l["address"]}  # set ones, as locals() has them
        expect("waiter's locals", facts["waiter_locals"], mine)
        kinds = {l["name"]: l["kind"] for l in frame["locals"]}
        expect("waiter's argument kinds", ["arg"] * 5, [kinds.get(n) for n in ("arg_text", "arg_number", "rest", "flag", "extra")])
        expect("waiter's cell", "cell", kinds.get("captured"))
        expect("waiter's first locals are its arguments", ["arg"] * 5, [l["kind"] for l in frame["locals"][:5]])
        expect("waiter's instruction offset (its f_lasti)", facts["waiter_lasti"], frame["instruction_offset"])
        minor = int(got["version"].split(".")[1])
        if minor <= 10:  # the with block: SETUP_FINALLY (122) at the frame's block stack
            expect("waiter's block stack: one SETUP_FINALLY", [122], [b[0] for b in frame["blocks"]])
        else:
            expect("waiter's exception table (co_exceptiontable's length)", facts["waiter_exception_table"],
                   frame.get("exception_table_size"))
        expect("waiter's globals (id(globals()))", "%#x" % facts["globals"], frame["globals"])
        if args.interpreter == "debian" and not args.no_dwarf:
            said, reading, text = locals_facts.gdb_waiter_locals(core, scenario.PYTHON)
            if not said:
                bad.append("%s printed no locals: %s" % (reading, text[-800:]))
            compared = [n for n, v in said.items() if n in mine and not mine[n].startswith("<") and not v.startswith("<")]
            for name in compared:
                expect("%s %s" % (reading, name), said[name], mine[name])
            if said and len(compared) < 4:
                bad.append("only %d of %s compared: %r" % (len(compared), reading, said))
            print("%s: %d locals, %d compared as scalars" % (reading, len(said), len(compared)))
    print("%d facts checked in %.1f s" % (checked, time.monotonic() - started))
    for b in bad:
        print("DIFFERS: " + b)
    if any("yield from" in b or "await" in b for b in bad):
        print("generators read: " + json.dumps(gens))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
