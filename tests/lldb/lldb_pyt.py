#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The pyt commands in real lldb-14 (issue 42 item 5): the C++ plugin, and the Python front end
(lldb-19's) run by lldb-14's Python once PYTHONPATH names its lldb module. Held against the
program (the seed's service in crash-py mode: its FACTS, and seed_logic.py's own lines), the CLI's
JSON for the same core, lldb's own frames and threads, and gdb's pyt on the same core (pyt up's
moves, and pyt bt --all against thread apply all pyt bt), with libpython.py's py-up."""
import argparse
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from debugger_batch import NOISE, between, gdb, marked, sections, select_function  # noqa: E402
from findings_cases import expect  # noqa: E402

# Debian 12's lldb-14 finds its lldb module here only when told (its `lldb -P` names a directory
# that does not exist).
LLDB14_PYTHONPATH = [os.path.dirname(os.path.dirname(p))
                     for p in sorted(glob.glob("/usr/lib/llvm-14/lib/python3*/dist-packages/lldb/embedded_interpreter.py"))]


def run_lldb(loads, target_args, commands, env=None, timeout=180):
    """lldb -b with `loads` (the plugin's or the Python module's load command) and each command an
    -o: (exit status, output lines without lldb-14's own tracebacks, the raw output)."""
    argv = [scenario.LLDB, "-b", "-o", loads]
    for c in commands:
        argv += ["-o", c]
    out = subprocess.run(argv + target_args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=timeout, env=env)
    raw = out.stdout.decode(errors="replace")
    return out.returncode, [l for l in raw.splitlines() if not NOISE.match(l)], raw


def loaders(args):
    """(name, load command, environment) of each front end this lldb can run."""
    out = [("plugin", "plugin load " + args.plugin, None)]
    if args.python_module and LLDB14_PYTHONPATH:
        env = dict(os.environ, PYTHONPATH=LLDB14_PYTHONPATH[0])
        out.append(("python", "command script import " + args.python_module, env))
    return out


def logic_lines(scenarios):
    """seed_logic.py's own account: the line of each function's call below it."""
    with open(os.path.join(scenarios, "seed_logic.py")) as f:
        text = f.read().splitlines()
    line = lambda needle: next(i + 1 for i, t in enumerate(text) if needle in t)  # noqa: E731
    return {"check": line("return checker.work(file)"), "on_recv_msg": line("reply = check(checker, file)")}


def cli_frames(pytstates, core, lwp):
    """The CLI's thread state that LWP runs, and its Python frames: (address, [(function, file, line)])."""
    _, report, _ = scenario.run_pytstates(pytstates, ["tstates", "--core", core, "--json"])
    for runtime in report["runtimes"]:
        for interp in runtime["interpreters"]:
            for t in interp["tstates"]:
                if t.get("lwp") == lwp and t.get("frames"):
                    return t["address"], [(f["function"], f["file"], f["line"]) for f in t["frames"]]
    return None, []


def frames_in_order(text, frames):
    """Every frame's function and file:line in text, innermost first."""
    at = 0
    for function, path, line in frames:
        m = re.compile(re.escape(function) + r"\b.*?" + re.escape(os.path.basename(path)) + ":" + str(line) + r"\b").search(text, at)
        if not m:
            return False
        at = m.end()
    return True


CRASH_COMMANDS = ["thread list", "bt", "pyt bt", "pyt-bt", "pyt bt --native", "pyt bt --all", "TAKE_GIL", "frame variable tstate", "pyt tstate tstate",
                  "frame info", "pyt up", "frame info", "pyt locals", "pyt up", "frame info", "pyt print pending", "pyt print file",
                  "pyt down", "frame info", "down", "pyt up 1", "frame info", "pyt tstate", "THREAD", "thread list"]
# The same moves in gdb on the same core (pyt up from take_gil, ..., `down` to _PyObject_MakeTpCall
# and pyt up from there), thread apply all pyt bt first (gdb runs it in each thread's frame 0), and
# libpython.py's py-up from take_gil.
GDB_COMMANDS = (marked("all", "thread apply all pyt bt") + [select_function("take_gil")] + marked("up", "pyt up") + marked("f1", "frame") + marked("up2", "pyt up") +
                marked("down", "pyt down") + ["down"] + marked("up3", "pyt up") + marked("f3", "frame") + ["frame 0"] +
                marked("pyup1", "py-up") + marked("pyup2", "py-up") + marked("fpy", "frame"))
# pyt up's line: "#0  check (/path/seed_logic.py:8)  [C #11]"; gdb's frame line: "#11 0x... in _PyEval_EvalFrameDefault (...)"
PYT_FRAME = re.compile(r"^[ *]?#(\d+)\s+(\S+) \(")
GDB_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)", re.M)


def first_frame(text):
    m = PYT_FRAME.match(text)
    return (int(m.group(1)), m.group(2)) if m else None


def gdb_said(out, tag):
    """A marked gdb command's output without gdb's own warnings about the core (.reg-xstate)."""
    return "\n".join(l for l in between(out, tag).split("\n") if not l.startswith("warning: "))


def gdb_blocks(text):
    """thread apply all pyt bt: {LWP: pyt bt's text} of the threads whose block is a Python stack."""
    parts = re.split(r"^\nThread \d+ \(.*?\(LWP (\d+)\)\):\n", "\n" + text, flags=re.M)
    return {int(lwp): body.strip("\n") for lwp, body in zip(parts[1::2], parts[2::2]) if "thread state 0x" in body.split("\n", 1)[0]}


def lldb_blocks(text):
    """pyt bt --all: {LWP: pyt bt's text}, and lldb's thread numbers in order."""
    parts = re.split(r"^thread #(\d+): tid = (\d+)\n", text, flags=re.M)
    return ({int(lwp): body.strip("\n") for lwp, body in zip(parts[2::3], parts[3::3])}, [int(n) for n in parts[1::3]])


def crash_core(args):
    """The seed's crash under Python frames (kernel core), in lldb-14 through each front end."""
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr2", "crash-py"], "crash")
    try:
        worker, stale = facts["worker_lwp"], facts["deleted_tstate"]
        lines = logic_lines(args.scenarios)
        running, cli = cli_frames(args.pytstates, core, worker)
        expect([(f, l) for f, _p, l in cli] == [("check", lines["check"]), ("on_recv_msg", lines["on_recv_msg"])],
               "the CLI reads the program's two Python frames: %s, the program's %s" % (cli, lines))
        commands = [c.replace("THREAD", "pyt thread " + facts["main_tstate"]) for c in CRASH_COMMANDS]
        texts = {}
        _, gdb_out = gdb(args.gdb_script, [exe, core], GDB_COMMANDS)
        gdb_all = gdb_blocks(gdb_said(gdb_out, "all"))
        gdb_ups = [first_frame(gdb_said(gdb_out, t)) for t in ("up", "up2", "down", "up3")]
        expect(set(gdb_all) == {worker, facts["main_lwp"]} and gdb_ups == [(0, "check"), (1, "on_recv_msg"), (0, "check"), (1, "on_recv_msg")],
               "gdb: thread apply all pyt bt has both threads' stacks; pyt up from take_gil #0 check, up #1, down #0, and from "
               "_PyObject_MakeTpCall (below the eval frame, in no call libpython.py counts as a Python frame) up #1: %s\n%s" % (
                   gdb_ups, gdb_out[-4000:]))
        up_level, up_name = GDB_FRAME.search(between(gdb_out, "f1")).groups()
        py_level, py_name = GDB_FRAME.search(between(gdb_out, "fpy")).groups()
        # Debian 13's libpython.py (3.13) selects the eval frame but cannot read it: its line then says so.
        unreadable = "unable to read python frame information" in between(gdb_out, "pyup2").lower()
        expect(up_name == "_PyEval_EvalFrameDefault" and (py_level, py_name) == (up_level, up_name) and
               "<built-in method work" in between(gdb_out, "pyup1") and ("in check (" in between(gdb_out, "pyup2") or unreadable),
               "libpython.py's py-up from take_gil stops at cfunction_call, then at the eval frame gdb's pyt up selected (#%s): %s %s:\n%s" % (
                   up_level, py_level, py_name, between(gdb_out, "pyup1") + between(gdb_out, "pyup2")))
        for name, load, env in loaders(args):
            # take_gil's own frame (`take_gil(...`, not `take_gil [inlined] ...`): 3.11's is #0; Debian 13's
            # 3.13's #3, under the inlined atomics it crashed in.
            _, bt_lines, _ = run_lldb(load, ["--core", core, exe], ["bt"], env=env)
            gil_frame = next((int(m.group(1)) for m in (re.search(r"frame #(\d+): .*`take_gil\(", l) for l in bt_lines) if m), 0)
            run = [c.replace("TAKE_GIL", "frame select %d" % gil_frame) for c in commands]
            status, out_lines, raw = run_lldb(load, ["--core", core, exe], run, env=env)
            expect(status == 0 and "Stack dump" not in raw, "%s: lldb ends normally (status %d):\n%s" % (name, status, raw[-3000:]))
            out = sections(out_lines)
            missing = [c for c in run if c not in out]
            expect(not missing and "error:" not in "\n".join(out_lines), "%s: every command ran without error (%s):\n%s" % (name, missing, raw[-6000:]))
            indexes = {int(m.group(2)): int(m.group(1)) for m in re.finditer(r"thread #(\d+): tid = (\d+)", out["thread list"])}
            bt = out["pyt bt"]
            expect(frames_in_order(bt, cli), "%s: pyt bt names the CLI's and the program's frames in order %s:\n%s" % (name, cli, bt))
            expect(out["pyt-bt"] == bt, "%s: pyt-bt is pyt bt" % name)
            native = out["pyt bt --native"]
            expect(frames_in_order(native, cli) and "take_gil" in native,
                   "%s: pyt bt --native merges the native frames (take_gil) and the Python ones:\n%s" % (name, native))
            dispatcher = re.search(r"cpp_function::dispatcher\(.*?args_in=(0x[0-9a-f]+) (.*?), kwargs_in=", out["bt"])
            expect(dispatcher and dispatcher.group(2) == "(2,)",
                   "%s: bt shows the PyObject * summary of pybind11's arguments, (file,) = (2,):\n%s" % (name, out["bt"]))
            tstate_text = out["pyt tstate tstate"]
            expect(stale in tstate_text and "stale" in tstate_text.lower(),
                   "%s: pyt tstate tstate (take_gil's) names the stale pointer %s:\n%s" % (name, stale, tstate_text))
            summary = out["frame variable tstate"]
            expect(stale[2:] in summary.lower() and "stale" in summary.lower(),
                   "%s: frame variable tstate in take_gil shows the summary:\n%s" % (name, summary))
            texts[name] = out
            # the sections of repeated commands: the last one is kept by sections(); read them in order
            infos = re.findall(r"\(lldb\) frame info\n(.*?)\n", "\n".join(out_lines) + "\n")
            expect(len(infos) == 5 and "frame #%d:" % gil_frame in infos[0] and "take_gil" in infos[0],
                   "%s: pyt bt, pyt bt --native, --all and pyt tstate leave lldb's selection alone: %s" % (name, infos[:1]))
            expect(all("_PyEval_EvalFrameDefault" in i for i in infos[1:]),
                   "%s: pyt up, pyt up, pyt down, pyt up each leave lldb in the eval frame that runs the Python frame: %s" % (name, infos))
            # The Python frame each move selected, in order: as gdb's pyt selected them on the same core.
            ups = [first_frame(t) for t in re.findall(r"\(lldb\) pyt (?:up|down)(?: 1)?\n(.*?)\n", "\n".join(out_lines) + "\n")]
            expect(ups == gdb_ups and "_PyObject_MakeTpCall" in out["down"],
                   "%s: pyt up, up, down, and up from _PyObject_MakeTpCall select what gdb's pyt selects: %s, gdb %s" % (name, ups, gdb_ups))
            every, numbers = lldb_blocks(out["pyt bt --all"])
            expect(every == gdb_all and numbers == sorted(numbers) and every[worker] == bt,
                   "%s: pyt bt --all is gdb's thread apply all pyt bt, block for block (LWPs %s), in lldb's order %s:\n%s\n--- gdb:\n%s" % (
                       name, sorted(gdb_all), numbers, out["pyt bt --all"], between(gdb_out, "all")))
            expect(re.search(r"\b2\b", out["pyt print file"]) and "local" in out["pyt print file"],
                   "%s: pyt print file in on_recv_msg: the program crashed at file 2:\n%s" % (name, out["pyt print file"]))
            pending = out["pyt print pending"]
            expect("local 'pending' = [2, 2]" in pending,
                   "%s: pyt print pending: on_recv_msg's local, [file] * 2:\n%s" % (name, pending))
            module = glob.glob(os.path.join(args.scenarios, "seed_module*.so"))
            expect(len(module) == 1 and "checker = <module 'seed_module' from %r>" % module[0] in out["pyt locals"] and "file = 2" in out["pyt locals"],
                   "%s: pyt locals of check(): the module the host imported from %s, as repr() words it:\n%s" % (name, module, out["pyt locals"]))
            expect(running in out["pyt tstate"] and stale not in out["pyt tstate"].splitlines()[0],
                   "%s: pyt tstate with no argument: the one the worker runs, %s:\n%s" % (name, running, out["pyt tstate"]))
            selected = re.search(r"^\* thread #(\d+)", out["thread list"], re.M)
            main_index = indexes.get(facts["main_lwp"])
            expect(selected and int(selected.group(1)) == main_index,
                   "%s: pyt thread MAIN_TSTATE selects lldb's thread #%s (LWP %d):\n%s" % (name, main_index, facts["main_lwp"], out["thread list"]))
            print("%s: pyt bt\n%s\n%s: frame variable tstate\n%s" % (name, bt, name, summary))
        if len(texts) == 2:
            for c in ("pyt bt", "pyt bt --native", "pyt tstate tstate", "pyt locals", "pyt print file", "pyt bt --all"):
                expect(texts["plugin"][c] == texts["python"][c],
                       "the C++ plugin and the Python front end print the same bytes for %s:\n%s\n---\n%s" % (c, texts["plugin"][c], texts["python"][c]))
    finally:
        scenario.cleanup(core)


def live(args):
    """Stopped at a breakpoint in the pybind11 function (seed_module's work) of the running
    service, twice: each stop's pyt bt and pyt print file are that stop's (file 1, then file 2)."""
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    lines = logic_lines(args.scenarios)
    commands = ["breakpoint set -n work -s " + os.path.basename(glob.glob(os.path.join(args.scenarios, "seed_module*.so"))[0]),
                "run", "pyt bt", "pyt print file", "continue", "pyt bt", "pyt print file", "process kill"]
    for name, load, env in loaders(args):
        _, out_lines, raw = run_lldb(load, ["--", exe, "svr2", "crash-py"], commands, env=env)
        text = "\n".join(out_lines)
        stops = re.findall(r"\(lldb\) pyt bt\n(.*?)\(lldb\) pyt print file\n(.*?)\n", text + "\n", re.S)
        expect(len(stops) == 2, "%s: two stops at work, each with pyt bt and pyt print file:\n%s" % (name, raw[-6000:]))
        for (bt, printed), file in zip(stops, (1, 2)):
            expect("check" in bt and "on_recv_msg" in bt and "seed_logic.py:%d" % lines["check"] in bt
                   and "seed_logic.py:%d" % lines["on_recv_msg"] in bt, "%s: stop %d: pyt bt shows check and on_recv_msg:\n%s" % (name, file, bt))
            expect(re.search(r"\b%d\b" % file, printed), "%s: stop %d: pyt print file says %d: %s" % (name, file, file, printed))
        print("%s: stop 1 pyt print file: %s; stop 2: %s" % (name, stops[0][1].strip(), stops[1][1].strip()))


def errors(args):
    """Each failure one line (lldb -b stops at a failing command: one lldb per case)."""
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr2", "crash-py"], "crash")
    try:
        cases = [([], "pyt bt", "no process or core"),
                 (["--core", core, exe], "pyt tstate no_such_name", "lldb cannot evaluate no_such_name"),
                 (["--core", core, exe], "pyt frame 99", "no Python frame 99"),
                 (["--core", core, exe], "pyt bt --bogus", "unknown option --bogus"),
                 (["--core", core, exe], "pyt down", "unable to find a newer Python frame")]
        for name, load, env in loaders(args):
            for target, command, words in cases:
                _, out_lines, raw = run_lldb(load, target, [command], env=env)
                out = sections(out_lines)
                expect(command in out and words in out[command] and "Traceback" not in out[command]
                       and out[command].count("\n") == 0, "%s: %s: one line with %r:\n%s" % (name, command, words, raw[-3000:]))
        # Debian's lldb-14 as shipped: its tracebacks, and the plugin's one line saying whose they are.
        _, out_lines, raw = run_lldb("plugin load " + args.plugin, [], ["version"], env=dict(os.environ, PYTHONPATH=""))
        broken = "No module named 'lldb.embedded_interpreter'" in raw
        noted = "pytstates: the ModuleNotFoundError" in raw
        expect(noted == broken, "the plugin explains lldb's own tracebacks exactly when lldb prints them:\n" + raw)
        if LLDB14_PYTHONPATH:
            _, _, fixed = run_lldb("plugin load " + args.plugin, [], ["version"], env=dict(os.environ, PYTHONPATH=LLDB14_PYTHONPATH[0]))
            expect("embedded_interpreter" not in fixed and "pytstates: the ModuleNotFoundError" not in fixed,
                   "with PYTHONPATH set, neither lldb's traceback nor the note:\n" + fixed)
        print("lldb's tracebacks: %s; the note: %s" % (broken, noted))
    finally:
        scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--plugin", required=True)
    p.add_argument("--python-module", default="", help="share/pytstates/lldb/pytstates.py (the Python front end)")
    p.add_argument("--gdb-script", default="", help="plugin/gdb/pytstates.gdb (gdb's pyt on the same core)")
    p.add_argument("--scenarios", required=True)
    p.add_argument("case", choices=["crash-core", "live", "errors"])
    args = p.parse_args()
    {"crash-core": crash_core, "live": live, "errors": errors}[args.case](args)
    print("PASS lldb pyt " + args.case)


if __name__ == "__main__":
    main()
