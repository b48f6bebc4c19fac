#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gdb's own bt, print and info threads with pytstates loaded (plugin/python/pytstates/gdb_*.py),
in real gdb on real cores and processes, held against what the programs say of themselves
(bt_program.py prints its own stack; the seed's host prints the stale pointer and its LWP),
against CPython's libpython.py (Debian's python3.X-dbg) reading the same memory, and against the
CLI's JSON.

Cases:
  seed-core   the seed's crash core: print tstate in take_gil's frame, bt's arguments, $py_gil_holder()
  live        bt_program.py under gdb, stopped twice at time_sleep: bt's Python rows, bt -no-filters,
              libpython.py's py-bt, info threads' names, the worker's bt; the second stop shows the second
  stripped    pyenv's CPython 3.12 with its libpython stripped (strip -g): no libpython.py, no DWARF:
              bt's Python rows still, and libpython.py's names tell and run ours
  libpython   Debian's python3.X with python3.X-dbg's libpython.py: pytstates loaded before it and
              after it, py-bt is libpython.py's and pytstates' bt rows are there either way
  terminal    a gdb session typed in a real terminal (tmux): bt, pyt up, pyt locals, pyt tstate tstate
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import json_contract  # noqa: E402
import pyenv  # noqa: E402
import scenario  # noqa: E402
from debugger_batch import between, gdb, marked, select_function  # noqa: E402
from findings_cases import expect  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bt_program.py")
PYTHON_ROW = re.compile(r"^    \(Python\) (.*) \(\) at (.*):(\d+)$")
FRAME_ROW = re.compile(r"^#(\d+) ")


def python_rows(bt):
    """bt's Python rows: [function, file, line] in order, innermost first."""
    return [[m.group(1), m.group(2), int(m.group(3))] for m in (PYTHON_ROW.match(l) for l in bt.splitlines()) if m]


def check_placement(bt):
    """Every Python row follows an eval frame's row (a C frame that is _PyEval_EvalFrameDefault)
    or another Python row: where pystack --native puts them."""
    last_c = None
    for line in bt.splitlines():
        if PYTHON_ROW.match(line):
            expect(last_c is not None and "_PyEval_EvalFrameDefault" in last_c,
                   "a Python row after %r, not after an eval frame:\n%s" % (last_c, bt))
        elif FRAME_ROW.match(line):
            last_c = line


def facts_lines(text):
    return [json.loads(l[len("FACTS "):]) for l in text.splitlines() if l.startswith("FACTS ")]


def libpython_rows(text):
    """py-bt's frames (libpython.py: most recent call first): [function, file, line]."""
    return [[m.group(3), m.group(1), int(m.group(2))] for m in re.finditer(r'^  File "(.*)", line (\d+), in (.*)$', text, re.M)]


def thread_number(info_threads, lwp):
    m = re.search(r"^\*?\s*(\d+)\s+Thread 0x[0-9a-f]+ \(LWP %d\)(.*)$" % lwp, info_threads, re.M)
    expect(m is not None, "LWP %d in info threads:\n%s" % (lwp, info_threads))
    return int(m.group(1)), m.group(2)


def seed_core(args):
    """The seed's crash: take_gil(tstate=<the deleted thread state>) on the worker. print tstate and
    bt's argument say it is stale and name the worker and the pybind11 key that caches it; the same
    line as the view's summary; $py_gil_holder() is the CLI's holder."""
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr2", "crash"], "crash")
    try:
        # take_gil's own frame: 3.11's is #0; 3.13's (Debian 13) #3, under the inlined atomics it crashed in.
        cmds = (["thread 2", "frame 1"] + marked("sel1", "thread") + marked("fsel1", "frame") + ["thread 1", select_function("take_gil")] +
                marked("bt", "bt 8") + marked("plain", "bt -no-filters 8") + marked("print", "print tstate") +
                marked("holder", "print $py_gil_holder()") + marked("json", "py-tstates-check --json") +
                marked("tstate", "print $py_tstate()") + ["thread 2", "frame 1"] + marked("all", "thread apply all bt") +
                marked("threads", "info threads") + marked("sel2", "thread") + marked("fsel2", "frame"))
        _, out = gdb(args.gdb_script, [exe, core], cmds)
        printed = between(out, "print").strip()
        deleted = int(facts["deleted_tstate"], 16)
        m = re.match(r"^\$1 = 0x([0-9a-f]+) <(.*)>$", printed)
        expect(m is not None and int(m.group(1), 16) == deleted, "print tstate: the deleted pointer, explained:\n" + printed)
        summary = m.group(2)
        expect("stale" in summary and ("LWP %d" % facts["worker_lwp"]) in summary and ("key %d" % facts["module_key"]) in summary,
               "the summary says stale, names the worker's LWP and pybind11's key %d: %s" % (facts["module_key"], summary))
        bt = between(out, "bt")
        expect(re.search(r"take_gil \(tstate=tstate@entry=0x%x <%s>\)" % (deleted, re.escape(summary)), bt) is not None,
               "bt's argument explained as print explains it:\n" + bt)
        expect(re.search(r"tstate=tstate@entry=0x%x <" % deleted, between(out, "plain")) is not None,
               "bt -no-filters still prints values with the printers (they are not frame filters)")
        report = json_contract.loads(between(out, "json"))
        interpreter = [i for r in report["runtimes"] for i in r["interpreters"] if i["main"]][0]
        holder = interpreter.get("gil_holder")
        holder = int(holder, 16) if isinstance(holder, str) else (holder or 0)
        shown = between(out, "holder").strip()
        expect(re.match(r"^\$2 = (\(PyThreadState \*\) )?0x%x\b" % holder, shown) is not None,
               "$py_gil_holder() is the report's holder 0x%x: %s" % (holder, shown))
        expect(between(out, "sel1") == between(out, "sel2") and between(out, "fsel1") == between(out, "fsel2"),
               "bt, the printers, $py_tstate() and info threads leave the selected thread and frame alone:\n%s\n%s" % (
                   between(out, "fsel1"), between(out, "fsel2")))
        expect(between(out, "all").count("<stale: ") >= 2, "thread apply all bt explains the pointer too")
        print("print tstate: %s" % printed)
        print("bt: %s" % [l for l in bt.splitlines() if l.startswith("#0")][0])
        print("$py_gil_holder(): %s" % shown)
        print("$py_tstate() on the crashed thread: %s" % between(out, "tstate").strip())
    finally:
        scenario.cleanup(core)


def live(args):
    """bt_program.py under gdb (Debian's python3.X with python3.X-dbg), stopped at time_sleep twice."""
    stop = (marked("bt", "bt") + marked("plain", "bt -no-filters") + marked("pybt", "py-bt") + marked("threads", "info threads") +
            marked("tstate", "print $py_tstate()") + marked("arg", "print (PyThreadState *)$py_tstate()"))
    cmds = ["set debuginfod enabled off", "break time_sleep", "run"] + stop + ["continue"] + marked("bt2", "bt") + ["kill"]
    _, out = gdb(args.gdb_script, ["--args", scenario.PYTHON, PROGRAM], cmds)
    said = facts_lines(out)
    expect(len(said) == 2, "the program printed its stack at both stops:\n" + out[-3000:])
    first, second = said
    bt = between(out, "bt")
    rows = python_rows(bt)
    expect(rows == first["stack"], "bt's Python rows are the program's own stack:\n%s\n%s" % (rows, first["stack"]))
    check_placement(bt)
    expect(python_rows(between(out, "plain")) == [] and "_PyEval_EvalFrameDefault" in between(out, "plain"),
           "bt -no-filters: the eval frames, no Python rows")
    pybt = between(out, "pybt")
    if "Undefined command" in pybt or "not loaded here" in pybt:
        print("NOTE: no libpython.py for %s (python3.X-dbg not installed): py-bt not compared" % scenario.PYTHON)
    else:
        expect(libpython_rows(pybt) == rows, "libpython.py's py-bt reads the same frames:\n%s\n%s" % (pybt, rows))
    threads = between(out, "threads")
    _, worker_row = thread_number(threads, first["worker_lwp"])
    expect('"%s"' % first["worker_name"] in worker_row, "info threads names the worker %s:\n%s" % (first["worker_name"], threads))
    for tag in ("tstate", "arg"):  # bt read the stop: the printers explain on a live process too
        expect(re.match(r'^\$\d+ = 0x[0-9a-f]+ <LWP %d "MainThread"' % first["lwp"], between(out, tag).strip()) is not None,
               "%s: the main thread's state, explained: %s" % (tag, between(out, tag)))
    second_bt = between(out, "bt2")
    expect(python_rows(second_bt) == second["stack"] and second["stack"] != first["stack"],
           "after continue, bt shows the second stop's stack:\n%s\n%s" % (python_rows(second_bt), second["stack"]))
    print("stop 1: %d Python rows, as the program's own stack and py-bt; stop 2: %s" % (len(rows), second["stack"][0]))


def live_worker(args):
    """A gcore of bt_program.py paused: the worker's bt, three calls deep under threading's wait."""
    facts, core = scenario.take_core([scenario.PYTHON, PROGRAM, "pause"], "gcore")
    try:
        _, out = gdb(args.gdb_script, [scenario.PYTHON, core], marked("threads", "info threads"))
        number, _ = thread_number(between(out, "threads"), facts["worker_lwp"])
        main_number, _ = thread_number(between(out, "threads"), facts["lwp"])
        _, out = gdb(args.gdb_script, [scenario.PYTHON, core],
                     marked("worker", "thread apply %d bt" % number) + marked("main", "thread apply %d bt" % main_number) +
                     marked("threads", "info threads"))
        expect(python_rows(between(out, "worker")) == facts["worker_stack"],
               "the worker's bt: %s\n%s" % (python_rows(between(out, "worker")), facts["worker_stack"]))
        expect(python_rows(between(out, "main")) == facts["stack"], "the main thread's bt")
        odd_number, odd_row = thread_number(between(out, "threads"), facts["odd_lwp"])
        _, odd = gdb(args.gdb_script, [scenario.PYTHON, core], marked("odd", "thread apply %d bt" % odd_number) + marked("threads", "info threads"))
        for raw in ("\x1b", "\x07", "\u202e", "\udce9"):
            expect(raw not in odd, "no %r reaches the terminal raw:\n%s" % (raw, odd))
        expect(["odd\\x07runner", facts["odd_file_escaped"], 3] in python_rows(between(odd, "odd")),
               "the odd thread's frame, escaped: %s" % python_rows(between(odd, "odd")))
        _, odd_row = thread_number(between(odd, "threads"), facts["odd_lwp"])
        expect('"odd\\x1b[31m\\u202ename"' in odd_row, "info threads: the odd name escaped: " + odd_row)
        _, switched = gdb(args.gdb_script, [scenario.PYTHON, core], ["disable frame-filter global pytstates"] + marked("off", "bt") +
                          ["enable frame-filter global pytstates"] + marked("on", "bt") + marked("hide", "bt -hide"))
        expect(python_rows(between(switched, "off")) == [] and python_rows(between(switched, "on")) == facts["stack"] and
               python_rows(between(switched, "hide")) == [], "disable frame-filter, enable frame-filter, bt -hide")
        _, named = thread_number(between(out, "threads"), facts["worker_lwp"])
        expect('"pyt-worker"' in named, "info threads names the worker on a core too:\n" + between(out, "threads"))
    finally:
        scenario.cleanup(core)


def stripped(args):
    """pyenv's CPython 3.12 with libpython stripped of its DWARF: no libpython.py can read it and
    none is loaded; bt's rows come from pytstates alone, and libpython.py's names say ours."""
    found = pyenv.require("3.12")
    _, python = found
    prefix = os.path.dirname(os.path.dirname(python))
    work = tempfile.mkdtemp(prefix="pytstates-stripped-")
    try:
        lib = os.path.join(work, "libpython3.12.so.1.0")
        shutil.copy(os.path.join(prefix, "lib", "libpython3.12.so.1.0"), lib)
        subprocess.run(["strip", "-g", lib], check=True)
        env = dict(os.environ, LD_LIBRARY_PATH=work)
        facts, core = scenario.take_core([python, PROGRAM, "pause"], "gcore", env=env)
        try:
            _, out = gdb(args.gdb_script, [python, core], marked("maps", "info sharedlibrary") + marked("bt", "bt") +
                         marked("pybt", "py-bt") + marked("help", "help py-bt") + marked("list", "py-list"))
            expect(lib in between(out, "maps"), "the stripped copy is the libpython gdb loaded:\n" + between(out, "maps"))
            rows = python_rows(between(out, "bt"))
            expect(rows == facts["stack"], "bt's Python rows without DWARF:\n%s\n%s" % (rows, facts["stack"]))
            check_placement(between(out, "bt"))
            pybt = between(out, "pybt")
            expect("py-bt: CPython's libpython.py is not loaded here" in pybt and "`pyt bt`" in pybt,
                   "py-bt names ours:\n" + pybt)
            expect("pyt bt" in between(out, "help"), "help py-bt names ours:\n" + between(out, "help"))
            print("py-bt on a stripped 3.12: " + pybt.strip().splitlines()[0])
        finally:
            scenario.cleanup(core)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def libpython(args):
    """Debian's python3.X and its -dbg package's libpython.py, auto-loaded with the executable:
    sourced before the target (libpython.py loads after pytstates and replaces its placeholders) and
    after it (the names are taken: pytstates leaves them); py-bt is libpython.py's both times."""
    auto = "/usr/share/gdb/auto-load%s-gdb.py" % os.path.realpath(scenario.PYTHON)
    if not os.path.exists(auto):
        pyenv.not_run("no %s (python%s-dbg is not installed)" % (auto, scenario.PYTHON_VERSION))
    facts, core = scenario.take_core([scenario.PYTHON, PROGRAM, "pause"], "gcore")
    try:
        cmds = marked("pybt", "py-bt") + marked("help", "help py-bt") + marked("bt", "bt")
        _, before = gdb(args.gdb_script, [scenario.PYTHON, core], cmds)
        argv = ["gdb", "-q", "-batch", "-nx", "-ex", "file " + scenario.PYTHON, "-ex", "core-file " + core, "-ex", "source " + args.gdb_script]
        for c in cmds:
            argv += ["-ex", c]
        after = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode(
            errors="replace")
        for name, out in (("pytstates first", before), ("libpython.py first", after)):
            expect(libpython_rows(between(out, "pybt")) == facts["stack"], "%s: libpython.py's py-bt:\n%s" % (name, between(out, "pybt")))
            expect("not loaded here" not in between(out, "help"), "%s: help py-bt is libpython.py's" % name)
            expect(python_rows(between(out, "bt")) == facts["stack"], "%s: bt's Python rows" % name)
    finally:
        scenario.cleanup(core)


def terminal(args):
    """gdb on a terminal (tmux, 200x50), a user typing: bt, pyt up, pyt locals, frame, pyt tstate
    tstate; each answer read from the screen."""
    if not shutil.which("tmux"):
        pyenv.not_run("tmux is not installed")
    facts, core = scenario.take_core([scenario.PYTHON, PROGRAM, "pause"], "gcore")
    session = "pytstates-bt-%d" % os.getpid()
    sock = ["-L", session]
    try:
        subprocess.run(["tmux"] + sock + ["new-session", "-d", "-s", session, "-x", "200", "-y", "50",
                                          "gdb -q -nx -iex 'set pagination off' -ex 'source %s' %s %s" % (args.gdb_script, scenario.PYTHON, core)],
                       check=True)

        def screen():
            return subprocess.run(["tmux"] + sock + ["capture-pane", "-p", "-J", "-S", "-", "-t", session], stdout=subprocess.PIPE,
                                  universal_newlines=True).stdout

        def typed(command, wait_for="(gdb) "):
            before = screen().count("(gdb) ")
            subprocess.run(["tmux"] + sock + ["send-keys", "-t", session, "-l", command], check=True)
            subprocess.run(["tmux"] + sock + ["send-keys", "-t", session, "Enter"], check=True)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                text = screen()
                if text.count("(gdb) ") > before:
                    return text[text.rfind("(gdb) " + command):]
                time.sleep(0.2)
            raise AssertionError("no prompt after %r:\n%s" % (command, screen()))

        deadline = time.monotonic() + 60
        while "(gdb) " not in screen() and time.monotonic() < deadline:
            time.sleep(0.2)
        bt = typed("bt")
        expect(python_rows(bt) == facts["stack"], "bt on the screen shows the Python rows:\n" + bt)
        print("bt on the terminal:\n" + "\n".join(l for l in bt.splitlines() if "(Python)" in l or "_PyEval_EvalFrameDefault" in l))
        shown = {"bt": bt}
        for command in ("pyt up", "pyt locals", "frame function _PyEval_Vector", "pyt tstate tstate", "print tstate"):
            shown[command] = typed(command)
            print("%s:\n%s" % (command, shown[command].rstrip()))
        if "Undefined pyt command" in shown["pyt up"] or 'Undefined command: "pyt"' in shown["pyt up"]:
            print("NOTE: pyt up / pyt locals / pyt tstate are not in this build (gdb-nav's): only bt and print were held")
        else:
            # gdb's frame #0 is in time.sleep's C code, called through cfunction_vectorcall_O: the
            # first pyt up selects the Python frame that called it (libpython.py's py-up's rule)
            expect(re.search(r"#0\s+%s \(" % re.escape(facts["stack"][0][0]), shown["pyt up"]),
                   "pyt up selects %s, which called time.sleep" % facts["stack"][0][0])
            expect("worker" in shown["pyt locals"], "pyt locals in paused() shows its argument `worker`")
            expect(str(facts["lwp"]) in shown["pyt tstate tstate"], "pyt tstate tstate names the main thread's LWP")
        expect(re.search(r"\$1 = 0x[0-9a-f]+ <.*%d.*>" % facts["lwp"], shown["print tstate"]) is not None,
               "print tstate in _PyEval_Vector: the main thread state, explained")
    finally:
        subprocess.run(["tmux"] + sock + ["kill-server"], stderr=subprocess.DEVNULL)
        scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("case", choices=["seed-core", "live", "live-worker", "stripped", "libpython", "terminal"])
    args = p.parse_args()
    {"seed-core": seed_core, "live": live, "live-worker": live_worker, "stripped": stripped, "libpython": libpython,
     "terminal": terminal}[args.case](args)
    print("ok")


if __name__ == "__main__":
    main()
