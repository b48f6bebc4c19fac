#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pyt (bt, up, down, frame, list, locals, print, tstate, thread) in real gdb (-batch -nx) on real
cores and a live process, held against what the programs say they ran and against CPython's own
libpython.py (py-bt, py-locals) where Debian's python3.X-dbg loads it."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import pyenv  # noqa: E402
import scenario  # noqa: E402
import sid_python  # noqa: E402
from debugger_batch import between, gdb, marked, select_function  # noqa: E402
from findings_cases import expect  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CRASH_PROGRAM = os.path.join(HERE, "..", "findings", "crash_python_program.py")
CALLS_PROGRAM = os.path.join(HERE, "pybind_calls.py")

# pyt bt's frame lines: "*#1  crasher (/path/file.py:18)  [C #9]"
FRAME = re.compile(r"^[ *]?#(\d+)\s+(\S+) \((.*):(-?\d+)\)(?:\s+\[C #(\d+)\])?$", re.M)
# py-bt's: '  File "/path/file.py", line 18, in crasher'
PY_BT = re.compile(r'^  File "(.*)", line (\d+), in (\S+)$', re.M)
# gdb's frame line: "#9  0x... in _PyEval_EvalFrameDefault (...)" or "#9  _PyEval_EvalFrameDefault (...)"
GDB_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)", re.M)


def frames(text):
    """pyt bt's frames: [(index, function, file, line, C level or None)]."""
    return [(int(m.group(1)), m.group(2), m.group(3), int(m.group(4)), int(m.group(5)) if m.group(5) else None)
            for m in FRAME.finditer(text)]


def py_bt(text):
    return [(m.group(3), m.group(1), int(m.group(2))) for m in PY_BT.finditer(text)]


def gdb_frame(text):
    m = GDB_FRAME.search(text)
    expect(m is not None, "gdb's frame line in:\n" + text)
    return int(m.group(1)), m.group(2)


def no_traceback(out):
    expect("Traceback (most recent call last)" not in out and "Python Exception" not in out, "no Python exception reached gdb:\n" + out[-3000:])


def python_core(args):
    """A thread of Debian's python3.11 crashes in ctypes.string_at(0) under crasher(2)'s recursion:
    pyt bt against py-bt (libpython.py, auto-loaded with python3.11-dbg) and the program's FACTS;
    pyt up/down/frame select the C eval frame gdb's `frame` then shows; locals and print against
    the program's values; pyt thread by Python thread name; thread apply all pyt bt; the selected
    thread and frame kept by the commands that do not move."""
    facts, core = scenario.take_core([scenario.PYTHON, CRASH_PROGRAM], "crash")
    try:
        cmds = (marked("f0", "frame") + marked("bt", "pyt bt") + marked("f1", "frame") + marked("pybt", "py-bt") +
                marked("up", "pyt up") + marked("fup", "frame") + marked("up2", "pyt up 2") + marked("fup2", "frame") +
                marked("loc3", "pyt locals") + marked("down2", "pyt-down 2") + marked("loc1", "pyt locals") +
                marked("pdepth", "pyt print depth") + marked("pline", "pyt print line") + marked("pjson", "pyt print json") +
                marked("plen", "pyt print len") + marked("pnope", "pyt print no_such_name") + marked("list", "pyt list") +
                marked("fkeep", "frame") + marked("tstate", "pyt tstate") + marked("fkeep2", "frame") +
                marked("toofar", "pyt down 5") + marked("fkeep3", "frame") + ["frame 0"] + marked("fr", "pyt frame") +
                marked("main", "pyt thread MainThread") + marked("tmain", "thread") + marked("crasher", "pyt thread crasher") +
                marked("all", "thread apply all pyt bt") + marked("native", "pyt bt -native") + marked("full", "pyt bt -full"))
        _, out = gdb(args.gdb_script, [scenario.PYTHON, core], cmds)
        no_traceback(out)
        ours = frames(between(out, "bt"))
        theirs = py_bt(between(out, "pybt"))
        expect(theirs, "libpython.py's py-bt read the stack (python3.11-dbg installed):\n" + between(out, "pybt"))
        expect([(f, p, l) for _, f, p, l, _ in ours] == theirs, "pyt bt's frames are py-bt's:\n%s\n%s" % (ours, theirs))
        expect(ours[1][1:4] == ("crasher", facts["file"], facts["line"]) and ours[0][1:3] == ("string_at", facts["ctypes_file"]),
               "#0 string_at in ctypes, #1 crasher at the line the program names: %s" % ours[:2])
        expect([f[1] for f in ours[1:4]] == ["crasher"] * 3, "crasher(2) recursed twice: %s" % ours)
        expect(between(out, "f0") == between(out, "f1"), "pyt bt keeps the selected frame")
        expect('LWP %d "crasher"' % facts["lwp"] in between(out, "bt") and "holds the GIL" in between(out, "bt"),
               "the header names the thread and its GIL:\n" + between(out, "bt"))
        # pyt up: #1 crasher, its eval frame selected
        up = frames(between(out, "up"))
        level, name = gdb_frame(between(out, "fup"))
        expect(up and up[0][:2] == (1, "crasher") and name == "_PyEval_EvalFrameDefault" and up[0][4] == level == ours[1][4],
               "pyt up selects #1 and the C frame its [C #N] names: %s / #%d %s" % (up, level, name))
        up2 = frames(between(out, "up2"))
        level2, name2 = gdb_frame(between(out, "fup2"))
        expect(up2 and up2[0][0] == 3 and name2 == "_PyEval_EvalFrameDefault" and level2 == up2[0][4], "pyt up 2: #3")
        expect(between(out, "loc3").strip() == "depth = 2", "#3 is crasher(2): " + between(out, "loc3"))
        expect(frames(between(out, "down2"))[0][0] == 1, "pyt-down 2: #1")
        loc1 = between(out, "loc1")
        files = {"file": facts["file"], "ctypes_file": facts["ctypes_file"]}
        expect("depth = 0" in loc1 and "line = %d" % facts["line"] in loc1 and "files = %r" % files in loc1,
               "crasher(0)'s locals as the program made them:\n" + loc1)
        expect(between(out, "pdepth").strip() == "local 'depth' = 0" and between(out, "pline").strip() == "local 'line' = %d" % facts["line"],
               "pyt print finds locals")
        # the module's and the builtin's repr as this python3.11 prints them (its json's spec is the same file)
        json_repr = subprocess.run([scenario.PYTHON, "-c", "import json; print(repr(json))"], stdout=subprocess.PIPE,
                                   universal_newlines=True, check=True).stdout.strip()
        expect(between(out, "pjson").strip() == "global 'json' = " + json_repr and
               between(out, "plen").strip() == "builtin 'len' = <built-in function len>",
               "globals, then builtins, as Python's repr(): %s %s (python3.11 says %s)" % (between(out, "pjson"), between(out, "plen"), json_repr))
        expect("pyt print: 'no_such_name' not found" in between(out, "pnope"), "a missing name: one line")
        listing = between(out, "list")
        expect(re.search(r"^ *>%d\s+ctypes\.string_at\(0\)$" % facts["line"], listing, re.M), "pyt list marks the line:\n" + listing)
        expect(between(out, "fkeep") == between(out, "fkeep2") == between(out, "fkeep3"), "list, tstate, a refused down keep the frame")
        expect("no Python frame 5 newer" in between(out, "toofar"), "pyt down past #0: " + between(out, "toofar"))
        expect("runs on LWP %d" % facts["lwp"] in between(out, "tstate"), "pyt tstate: the selected thread's:\n" + between(out, "tstate"))
        expect(frames(between(out, "fr"))[0][0] == 0, "after gdb's `frame 0`, the selected Python frame is re-derived: #0")
        expect("LWP %d" % facts["lwp"] not in between(out, "tmain") and "Switching to thread" in between(out, "main"),
               "pyt thread MainThread selects the main thread:\n" + between(out, "main") + between(out, "tmain"))
        expect("(LWP %d)" % facts["lwp"] in between(out, "crasher"), "pyt thread crasher selects it")
        every = between(out, "all")
        expect(every.count("thread state 0x") == 2 and "<module> (%s:" % facts["file"] in every and "string_at" in every,
               "thread apply all pyt bt: both threads:\n" + every)
        native = between(out, "native")
        m = re.search(r"^#(\d+)\s+0x[0-9a-f]+ in _PyEval_EvalFrameDefault.*\n\s+\*?\(Python\) #0 string_at", native, re.M)
        expect(m is not None and int(m.group(1)) == ours[0][4], "pyt bt -native: the eval frame numbered as gdb does (#%s):\n%s" % (ours[0][4], native))
        expect("frame 0x" in between(out, "full") and "depth = 0" in between(out, "full"), "pyt bt -full: locals and addresses")
        print("pyt bt: %d frames, as py-bt and the program; up/down/frame on C #%d/#%d" % (len(ours), level, level2))
    finally:
        scenario.cleanup(core)


# The GIL's locked flag as gdb reads it by DWARF: 3.11's one GIL in _PyRuntime.ceval; 3.12+'s per
# interpreter (the main one's), an _Py_atomic_int on 3.12, a plain int from 3.13.
GIL_LOCKED = ("python exec(\"for e in ('_PyRuntime.ceval.gil.locked._value', '_PyRuntime.interpreters.main->ceval.gil->locked._value', "
              "'_PyRuntime.interpreters.main->ceval.gil->locked'):\\n try:\\n  print('= %d' % int(gdb.parse_and_eval(e)))\\n  break\\n "
              "except gdb.error:\\n  pass\")")


def seed_core(args):
    """The seed's crash: the worker faults in take_gil(tstate=<the deleted thread state>). pyt tstate
    tstate in that frame says it is in no list, which pybind11 key caches it on which LWP, and the
    finding; pyt bt's GIL line; pyt thread by a thread state's address; py-bt's own reading."""
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr2", "crash"], "crash")
    try:
        # take_gil's own frame: 3.11's is #0; 3.13's (Debian 13) #3, under the inlined atomics it crashed in.
        cmds = ([select_function("take_gil")] + marked("frame", "frame") + marked("tstate", "pyt tstate tstate") + marked("reg", "pyt-tstate $rdi") +
                marked("bt", "pyt bt") + marked("pybt", "py-bt") + marked("thr", "pyt thread %s" % facts["main_tstate"]) +
                marked("sel", "thread") + marked("mainbt", "pyt bt") + marked("bad", "pyt tstate no_such_symbol") +
                marked("none", "pyt thread nobody") + marked("gil", GIL_LOCKED))
        _, out = gdb(args.gdb_script, [exe, core], cmds)
        no_traceback(out)
        expect("take_gil" in between(out, "frame") and facts["deleted_tstate"] in between(out, "frame"), "take_gil's frame")
        text = "\n".join(l for l in between(out, "tstate").splitlines() if not l.startswith("warning: "))
        expect(text.startswith("thread state %s: in no interpreter's thread list (stale)" % facts["deleted_tstate"]) and
               "pybind11 key %d (%s) on LWP %d" % (facts["module_key"], facts["module_id"], facts["worker_lwp"]) in text and
               "stale-tstate" in text, "pyt tstate tstate names the stale pointer, its key and thread:\n" + text)
        bt = between(out, "bt")
        # What the worker would have done in take_gil is the GIL's own state, as gdb reads it (3.11:
        # _PyRuntime.ceval.gil): free, it would have taken it. (libpython.py's py-bt says "Waiting for
        # the GIL" for any take_gil frame.)
        locked = re.search(r"= (\d+)", between(out, "gil"))
        expect(locked is not None, "gdb reads the GIL's state: " + between(out, "gil"))
        would = ("it would have taken the GIL, which is free" if locked.group(1) == "0" else "crashed as it would wait for the GIL")
        expect("LWP %d:" % facts["worker_lwp"] in bt and would in bt, "pyt bt's GIL line (%r expected):\n%s" % (would, bt))
        expect("Waiting for the GIL" in between(out, "pybt"), "py-bt's own line:\n" + between(out, "pybt"))
        expect("(LWP %d)" % facts["main_lwp"] in between(out, "thr") + between(out, "sel"), "pyt thread TSTATE selects the main thread")
        expect("thread state %s" % facts["main_tstate"] in between(out, "mainbt"), "pyt bt there")
        expect(re.fullmatch(r"pyt tstate: cannot evaluate 'no_such_symbol': .*\n", between(out, "bad")), "a bad expression: one line")
        expect(re.fullmatch(r"pyt thread: no thread state, Python thread name or asyncio task is 'nobody'\n", between(out, "none")),
               "nothing to select: one line: " + between(out, "none"))
        print("pyt tstate tstate: stale, pybind11 key %d on LWP %d" % (facts["module_key"], facts["worker_lwp"]))
    finally:
        scenario.cleanup(core)


def stripped_core(args, version):
    """A stripped copy of pyenv's CPython 3.12 or 3.13 (libpython and the launcher without symbols
    or DWARF: no libpython.py can read it): pyt bt, up and locals from memory alone, against the
    program."""
    found = pyenv.python(version)
    if found is None:
        print("pyenv has no CPython %s: not run" % version)
        sys.exit(pyenv.NOT_RUN)
    _, python = found
    prefix = os.path.dirname(os.path.dirname(python))
    work = tempfile.mkdtemp(prefix="pytstates-stripped-")
    try:
        exe = os.path.join(work, "python" + version)
        library = "libpython%s.so.1.0" % version
        shutil.copy(python, exe)
        shutil.copy(os.path.join(prefix, "lib", library), work)
        subprocess.run(["strip", "--strip-all", exe, os.path.join(work, library)], check=True)
        env = dict(os.environ, LD_LIBRARY_PATH=work, PYTHONHOME=prefix)
        facts, core = scenario.take_core([exe, CRASH_PROGRAM], "crash", env=env)
        try:
            cmds = (["set solib-search-path " + work] + marked("info", "info sharedlibrary libpython") + marked("pybt", "py-bt") +
                    marked("bt", "pyt bt") + marked("up", "pyt up") + marked("fup", "frame") + marked("loc", "pyt locals") +
                    marked("all", "thread apply all pyt bt") + marked("ts", "pyt tstate") + marked("print", "pyt print line") +
                    marked("main", "pyt thread MainThread") + marked("mainbt", "pyt bt"))
            _, out = gdb(args.gdb_script, [exe, core], cmds)
            no_traceback(out)
            expect(work in between(out, "info") and "(*)" in between(out, "info"), "gdb loads the stripped libpython, no debugging information:\n" + between(out, "info"))
            expect("py-bt: CPython's libpython.py is not loaded here; pytstates' `pyt bt` answers:" in between(out, "pybt"),
                   "no libpython.py for it: its py-bt names pyt bt (gdb_libpython.py)")
            ours = frames(between(out, "bt"))
            expect(len(ours) == 7 and ours[1][1:4] == ("crasher", facts["file"], facts["line"]) and ours[0][1] == "string_at" and
                   [f[1] for f in ours[4:]] == ["run", "_bootstrap_inner", "_bootstrap"], "pyt bt from memory alone:\n" + between(out, "bt"))
            level, name = gdb_frame(between(out, "fup"))
            expect(name == "_PyEval_EvalFrameDefault" and frames(between(out, "up"))[0][4] == level,
                   "pyt up selects the eval frame by its exported symbol: #%d %s" % (level, name))
            loc = between(out, "loc")
            expect("depth = 0" in loc and "line = %d" % facts["line"] in loc, "crasher(0)'s locals:\n" + loc)
            expect(between(out, "all").count("thread state 0x") == 2, "thread apply all pyt bt")
            expect("runs on LWP %d" % facts["lwp"] in between(out, "ts"), "pyt tstate:\n" + between(out, "ts"))
            expect(between(out, "print").strip() == "local 'line' = %d" % facts["line"], "pyt print: " + between(out, "print"))
            # (the main thread is in t.join(), or still in t.start() when the crasher was quicker)
            expect("Switching to thread" in between(out, "main") and "<module> (%s:" % facts["file"] in between(out, "mainbt") and
                   '"MainThread"' in between(out, "mainbt"), "pyt thread MainThread, pyt bt there:\n" + between(out, "mainbt"))
            print("stripped %s: %d frames, pyt up on C #%d" % (version, len(ours), level))
        finally:
            scenario.cleanup(core)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sid_core(args, version):
    """Debian unstable's CPython 3.14 (its python3.14-dbg's DWARF, no libpython.py of its own
    loaded) crashes in ctypes.string_at(0) under crasher(2)'s recursion, a kernel core: pyt bt, up,
    locals, print, tstate and thread apply all pyt bt, against the program's FACTS."""
    try:
        root = sid_python.unpacked_root(os.path.join(HERE, "..", ".."), version, args.sid_dir)
    except RuntimeError as e:
        print("%s: not run" % e)
        sys.exit(77)  # no tree on this machine: skipped, never passed
    sid = sid_python.SidPython(root, version, with_debug_files=True)
    env = dict(os.environ)
    env.update(e.split("=", 1) for e in sid.environment)
    try:
        facts, core = scenario.take_core([sid.executable, CRASH_PROGRAM], "crash", env=env)
        try:
            cmds = (marked("bt", "pyt bt") + marked("up", "pyt up") + marked("fup", "frame") + marked("loc", "pyt locals") +
                    marked("print", "pyt print line") + marked("all", "thread apply all pyt bt") + marked("ts", "pyt tstate") +
                    marked("main", "pyt thread MainThread") + marked("mainbt", "pyt bt"))
            _, out = gdb(args.gdb_script, ["-iex", "set debug-file-directory " + os.path.join(root, "usr", "lib", "debug"),
                                           sid.executable, core], cmds)
            no_traceback(out)
            ours = frames(between(out, "bt"))
            expect(len(ours) == 7 and ours[0][1:3] == ("string_at", facts["ctypes_file"]) and
                   [f[1:4] for f in ours[1:4]] == [("crasher", facts["file"], facts["line"])] + [("crasher", facts["file"], ours[2][3])] * 2 and
                   [f[1] for f in ours[4:]] == ["run", "_bootstrap_inner", "_bootstrap"], "pyt bt on %s:\n%s" % (version, between(out, "bt")))
            expect('LWP %d "crasher"' % facts["lwp"] in between(out, "bt"), "the header names the thread:\n" + between(out, "bt"))
            level, name = gdb_frame(between(out, "fup"))
            up = frames(between(out, "up"))
            expect(up and up[0][:2] == (1, "crasher") and name == "_PyEval_EvalFrameDefault" and up[0][4] == level,
                   "pyt up selects #1 and its eval frame: %s / #%d %s" % (up, level, name))
            loc = between(out, "loc")
            expect("depth = 0" in loc and "line = %d" % facts["line"] in loc, "crasher(0)'s locals:\n" + loc)
            expect(between(out, "print").strip() == "local 'line' = %d" % facts["line"], "pyt print: " + between(out, "print"))
            expect(between(out, "all").count("thread state 0x") == 2, "thread apply all pyt bt:\n" + between(out, "all"))
            expect("runs on LWP %d" % facts["lwp"] in between(out, "ts"), "pyt tstate:\n" + between(out, "ts"))
            expect("Switching to thread" in between(out, "main") and '"MainThread"' in between(out, "mainbt") and
                   "<module> (%s:" % facts["file"] in between(out, "mainbt"), "pyt thread MainThread:\n" + between(out, "mainbt"))
            print("%s: %d frames, pyt up on C #%d" % (version, len(ours), level))
        finally:
            scenario.cleanup(core)
    finally:
        sid.close()


def live(args):
    """A running python3.11 calls a pybind11 function from inner() in outer(): break in it, run,
    pyt bt and locals; continue to the next call, pyt bt and locals show the new stop; pyt up
    from the breakpoint (in a call made through cfunction_call) selects inner and the eval frame
    libpython.py's py-up selects, the next pyt up outer; the program runs to its end."""
    cmds = (["set breakpoint pending on", "break (anonymous namespace)::work", "run"] + marked("bt1", "pyt bt") +
            marked("loc1", "pyt locals") + ["continue"] + marked("bt2", "pyt bt") + marked("loc2", "pyt locals") + ["continue"] +
            marked("loc3", "pyt locals") + marked("up1", "pyt up") + marked("fup1", "frame") + marked("up", "pyt up") +
            marked("fup", "frame") + marked("p", "pyt print round_no") + ["frame 0"] + marked("pyup", "py-up") +
            marked("fpyup", "frame") + ["delete", "continue"])
    _, out = gdb(args.gdb_script, ["--args", scenario.PYTHON, CALLS_PROGRAM, args.scenarios], cmds, timeout=180)
    no_traceback(out)
    m = re.search(r"^FACTS (.*)$", out, re.M)
    expect(m is not None, "the program's FACTS:\n" + out[-3000:])
    facts = json.loads(m.group(1))
    for tag in ("bt1", "bt2"):
        got = frames(between(out, tag))
        expect([f[1:4] for f in got[:2]] == [("inner", facts["file"], facts["inner_line"]), ("outer", facts["file"], facts["outer_line"])],
               "%s: inner and outer at their calls:\n%s" % (tag, between(out, tag)))
        expect('LWP %d "MainThread"' % facts["lwp"] in between(out, tag), "the thread")
    # the first stop is the program's outer(-1), then round 0, then round 1: each stop's own values
    expect([between(out, t).strip() for t in ("loc1", "loc2", "loc3")] == ["round_no = -1", "round_no = 0", "round_no = 1"],
           "each stop shows its own call: %s" % [between(out, t) for t in ("loc1", "loc2", "loc3")])
    level1, name1 = gdb_frame(between(out, "fup1"))
    py_level, py_name = gdb_frame(between(out, "fpyup"))
    expect(frames(between(out, "up1"))[0][:2] == (0, "inner") and name1 == "_PyEval_EvalFrameDefault" and
           frames(between(out, "up1"))[0][4] == level1, "pyt up from work (in cfunction_call): #0 inner, its eval frame #%d %s:\n%s" % (
               level1, name1, between(out, "up1")))
    # (Debian 13's libpython.py selects that frame but cannot read 3.13's: it says so on its line)
    expect((py_level, py_name) == (level1, name1) and
           ("in inner (round_no=1)" in between(out, "pyup") or "unable to read python frame information" in between(out, "pyup")),
           "libpython.py's py-up from work (it counts cfunction_call, below the eval frame, as a Python frame: its "
           "selected one) selects the eval frame pyt up selected (#%d): #%d %s:\n%s" % (level1, py_level, py_name, between(out, "pyup")))
    level, name = gdb_frame(between(out, "fup"))
    expect(frames(between(out, "up"))[0][1] == "outer" and name == "_PyEval_EvalFrameDefault", "pyt up on a live stop")
    expect(between(out, "p").strip() == "local 'round_no' = 1", "pyt print in outer")
    expect("DONE" in out and "exited normally" in out, "the program ran to its end:\n" + out[-1500:])
    print("live: 3 stops, each with its own locals; pyt up on C #%d" % level)


def view_api(args):
    """The view's questions as a front end asks them (tests/navigate/view_questions.py through
    gdb_nav.view()): each answer's fields against the program's facts, and each refusal one line."""
    facts, core = scenario.take_core([scenario.PYTHON, CRASH_PROGRAM], "crash")
    try:
        _, out = gdb(args.gdb_script, [scenario.PYTHON, core], ["source " + os.path.join(HERE, "view_questions.py")] + marked("bt", "bt -no-filters"))
        no_traceback(out)
        got = {m.group(1): json.loads(m.group(2)) for m in re.finditer(r"^VIEW (\S+) (.*)$", out, re.M)}
        wanted = "ctypes" if os.environ.get("PYTSTATES_CORE") == "ctypes" else "pybind11"
        expect(got["binding"]["binding"] == wanted, "the %s binding answered" % wanted, got["binding"])
        stack = got["stack"]
        expect(stack["lwp"] == facts["lwp"] and stack["thread_name"] == "crasher" and stack["gil"] == "holds" and
               [f["function"] for f in stack["frames"]][:4] == ["string_at", "crasher", "crasher", "crasher"] and
               stack["frames"][1]["line"] == facts["line"] and stack["frames"][1]["file"] == facts["file"], "stack", stack)
        # One eval group per _PyEval_EvalFrameDefault call in gdb's bt of the crashing thread (3.11: the
        # thread's bootstrap in its own; Debian 13's 3.13: one for all), innermost first, in order.
        calls = len(re.findall(r"^#\d+ .*\b_PyEval_EvalFrameDefault \(", between(out, "bt"), re.M))
        groups = [f["eval_group"] for f in stack["frames"]]
        expect(calls >= 1 and stack["eval_groups"] == calls and groups[:4] == [0] * 4 and groups == sorted(groups) and
               set(groups) == set(range(calls)) and all(f["end_line"] >= f["line"] for f in stack["frames"]),
               "eval groups (gdb's bt has %d eval frames) and positions" % calls, stack)
        expect(got["interpreter"]["id"] == 0 and got["interpreter"]["gil_holder_lwp"] == facts["lwp"] and
               "GIL held by LWP %d" % facts["lwp"] in got["interpreter"]["summary"], "interpreter", got["interpreter"])
        expect([r["lwp"] for r in got["gil-holder"]["interpreters"]] == [facts["lwp"]], "gil-holder", got["gil-holder"])
        expect({l["name"]: l["repr"] for l in got["locals"]["locals"]} ==
               {"depth": "0", "line": str(facts["line"]), "files": repr({"file": facts["file"], "ctypes_file": facts["ctypes_file"]})},
               "crasher(0)'s locals", got["locals"])
        expect(got["object-line"]["type"] == "int" and got["object-line"]["repr"] == str(facts["line"]), "object", got["object-line"])
        expect(got["tstate"]["listed"] and got["tstate"]["lwp"] == facts["lwp"] and got["tstate"]["holds_gil"] and
               got["tstate"]["summary"] == 'LWP %d "crasher", holds the GIL' % facts["lwp"], "tstate summary", got["tstate"])
        expect(got["find-name"]["lwp"] == got["find-tstate"]["lwp"] == facts["lwp"], "find-thread by name and by tstate")
        expect(got["frame"]["index"] == 2 and got["frame"]["text"].startswith("#2  crasher ("), "frame", got["frame"])
        for name, words in (("bad-json", "the question is not JSON"), ("unknown", "unknown question 'nonsense'"),
                            ("no-frame", "no Python frame #99"), ("no-lwp", "LWP 1 is not a thread of this process"),
                            ("not-object", "0x8 does not read as a Python object")):
            expect(words in got[name].get("error", ""), "%s: %s" % (name, got[name]))
        print("view: %d questions answered or refused as documented" % len(got))
    finally:
        scenario.cleanup(core)


def asyncio_core(args):
    """Two threads, each running its own event loop with a stuck task (tests/asyncio's twoloops):
    pyt thread selects the thread running a task's loop, by the task's name and by its address,
    and a Python thread by its name."""
    program = os.path.join(HERE, "..", "asyncio", "scenarios.py")
    facts, core = scenario.take_core([scenario.PYTHON, program, "twoloops"], "gcore")
    try:
        loops = {l["name"]: l for l in facts["loops"]}
        cmds = []
        for name in ("loop-one", "loop-two"):
            cmds += marked(name + "-name", "pyt thread %s-waiter" % name) + marked(name + "-addr", "pyt thread %d" % facts["tasks"][name + "-waiter"])
            cmds += marked(name + "-bt", "pyt bt") + marked(name + "-thread", "pyt thread %s" % loops[name]["thread"])
        _, out = gdb(args.gdb_script, [scenario.PYTHON, core], cmds)
        no_traceback(out)
        for name in ("loop-one", "loop-two"):
            lwp = loops[name]["lwp"]
            for how in ("name", "addr", "thread"):
                expect("(LWP %d)" % lwp in between(out, name + "-" + how), "pyt thread (%s of %s) selects LWP %d:\n%s" % (how, name, lwp, between(out, name + "-" + how)))
            expect('LWP %d "%s"' % (lwp, loops[name]["thread"]) in between(out, name + "-bt") and "_run_once" in between(out, name + "-bt"),
                   "pyt bt on the loop's thread:\n" + between(out, name + "-bt"))
        print("pyt thread: two tasks' loops, by name and address, and their threads")
    finally:
        scenario.cleanup(core)


def errors(args):
    """No process: one line; help pyt; libpython's names, where it is not loaded, name ours."""
    _, out = gdb(args.gdb_script, [], marked("none", "pyt bt") + marked("help", "help pyt") + marked("hbt", "help pyt-bt") +
                 marked("pybt", "py-bt") + marked("bad", "pyt bt -bogus"))
    no_traceback(out)
    expect(between(out, "none") == "pyt bt: no process or core: run, attach to a process or load a core first\n", between(out, "none"))
    expect("pyt bt" in between(out, "help") and "pyt tstate" in between(out, "help") and "-native" in between(out, "hbt"), "help")
    expect(between(out, "pybt").startswith("py-bt: CPython's libpython.py is not loaded here; pytstates' `pyt bt` answers:\n") and
           "pyt bt: no process or core" in between(out, "pybt"), "py-bt, where no libpython.py is loaded, names pyt bt and runs it")
    expect("unknown argument '-bogus'" in between(out, "bad") or "no process" in between(out, "bad"), between(out, "bad"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gdb-script", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--sid-dir", help="where scripts/debian-python unpacks unstable's CPython (sid-core-3.14)")
    p.add_argument("case", choices=["python-core", "seed-core", "stripped-core-3.12", "stripped-core-3.13", "sid-core-3.14", "live", "view-api",
                                    "view-api-ctypes", "asyncio-core", "errors"])
    args = p.parse_args()
    if args.case.startswith("stripped-core-"):
        stripped_core(args, args.case[len("stripped-core-"):])
    elif args.case.startswith("sid-core-"):
        sid_core(args, args.case[len("sid-core-"):])
    else:
        {"python-core": python_core, "seed-core": seed_core, "live": live, "view-api": view_api, "view-api-ctypes": view_api, "asyncio-core": asyncio_core, "errors": errors}[args.case](args)
    print("PASS navigate " + args.case)


if __name__ == "__main__":
    main()
