#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""py-tstates-record in real gdb and lldb (batch mode) on real programs, and `pytstates check
--history` on a core taken after a recorded run: the recorded events held against what the
programs print they did (their LWPs and thread-state addresses, which thread made, ran, deleted
each one), and the seed's crash told with who created, cached and deleted its stale thread state."""
import argparse
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import debugger_batch  # noqa: E402
import pyenv  # noqa: E402
import scenario  # noqa: E402
from debugger_batch import BEGIN, as_json, sections  # noqa: E402
from findings_cases import expect  # noqa: E402

TIMEOUT = 240


def between(text, tag):
    """gdb: the output between the markers; lldb: the output of the command `tag` echoed."""
    if BEGIN + tag in text:
        return debugger_batch.between(text, tag)
    out = sections(text.splitlines())
    expect(tag in out, "the output of %s not found in the debugger's output:\n%s" % (tag, text[-4000:]))
    return out[tag]


def session(argv, interrupt_at_ready, env=None):
    """Runs a debugger; the program's FACTS (and, when asked, a SIGINT to the program at READY so
    that the debugger stops it and runs the commands that follow). Returns (facts, output)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out, facts = [], None
    deadline = time.monotonic() + TIMEOUT
    buf = b""
    try:
        while True:
            left = deadline - time.monotonic()
            expect(left > 0, "the debugger did not finish in %d s:\n%s" % (TIMEOUT, b"".join(out).decode(errors="replace")[-4000:]))
            ready, _, _ = select.select([proc.stdout], [], [], left)
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out.append(chunk)
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode(errors="replace")
                if "FACTS {" in text:
                    facts = json.loads(text[text.index("FACTS {") + 6:])
                elif text.strip() == "READY" and interrupt_at_ready:
                    expect(facts is not None, "READY before FACTS")
                    time.sleep(0.3)  # into its blocking call
                    os.kill(facts["pid"], signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = b"".join(out).decode(errors="replace")
    expect(facts is not None, "the program printed no FACTS:\n" + text[-4000:])
    return facts, text


def gdb_argv(args, program, after_stop, environment=(), init=(), stop_at="main"):
    """init: -iex commands (before gdb loads the program); stop_at: where recording is turned on."""
    cmds = (["set pagination off", "set confirm off"] + ["set environment " + e for e in environment] +
            ["break " + stop_at, "run", "py-tstates-record on", "continue"] + after_stop + ["kill"])
    argv = ["gdb", "-q", "-batch", "-nx"]
    for c in init:
        argv += ["-iex", c]
    argv += ["-ex", "source " + args.gdb_script]
    for c in cmds:
        argv += ["-ex", c]
    return argv + ["--args"] + program


def lldb_argv(args, program, after_stop, environment=(), init=(), stop_at="main"):
    """environment: the inferior's, launched without a shell (a LD_LIBRARY_PATH of another glibc
    would break it); init: -O commands (before lldb loads the program)."""
    # Not -b: in batch mode lldb-14 drops the commands after one that stops on a signal, and runs
    # its -k commands only for some crashes; without it every -o runs in turn, then `quit`.
    # -K false: main's first instruction. lldb-19 takes a C++ main whose cold part GCC 14 put
    # before it (DWARF ranges) to start there, skips a "prologue" into the middle of an
    # instruction, and the program stops with SIGILL there.
    argv = [scenario.LLDB]
    for c in init:
        argv += ["-O", c]
    launch = ["settings set target.env-vars " + " ".join(environment), "process launch -X false"] if environment else ["run"]
    for c in (["plugin load " + args.plugin, "breakpoint set -n %s -K false" % stop_at] + launch + ["py-tstates-record on", "continue"] +
              after_stop + ["kill", "quit"]):
        argv += ["-o", c]
    return argv + ["--"] + program


def marked(debugger, tag, command):
    # lldb echoes each command it runs ("(lldb) py-tstates-check"): its output is what follows that
    # line up to the next command, and the tag is the command itself.
    return debugger_batch.marked(tag, command) if debugger == "gdb" else [command]


def load(path):
    with open(path) as f:
        return json.load(f)


def events_of(history, tstate, kind=None, lwp=None):
    return [e for e in history["events"] if e["tstate"] == tstate and (kind is None or e["event"] == kind)
            and (lwp is None or e["lwp"] == lwp)]


def culprit(event, cpython_hint="libpython"):
    """The first frame outside CPython (the module the breakpoint is in)."""
    frames = event["frames"]
    expect(frames, "the event has frames", event)
    for f in frames:
        if f["module"] != frames[0]["module"]:
            return f
    return frames[-1]


# --- the seed's crash ---------------------------------------------------------------------------

def seed_crash(args, debugger):
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    work = tempfile.mkdtemp(prefix="pytstates-history-")
    try:
        saved = os.path.join(work, "history.json")
        core = os.path.join(work, "core")
        after = (marked(debugger, "py-tstates-check", "py-tstates-check") + marked(debugger, "py-tstates-check --json", "py-tstates-check --json") +
                 ["py-tstates-record save " + saved] + marked(debugger, "py-tstates-record show", "py-tstates-record show"))
        if debugger == "gdb":
            after.append("gcore " + core)
        argv = (gdb_argv if debugger == "gdb" else lldb_argv)(args, [exe, "svr2", "crash"], after)
        facts, out = session(argv, interrupt_at_ready=False)
        expect(debugger == "lldb" or "Traceback" not in out, "no Python traceback in gdb:\n" + out[-3000:])
        report = as_json(between(out, "py-tstates-check --json"))
        text = between(out, "py-tstates-check")
        worker, deleted = facts["worker_lwp"], facts["deleted_tstate"]
        stale = [f for f in report["findings"] if f["code"] == "stale-tstate" and f["tstate"] == deleted]
        expect(len(stale) == 1 and stale[0]["lwp"] == worker, "the stale pointer on the worker", report["findings"])
        history = stale[0].get("history")
        expect(history, "the stale finding carries its history", stale[0])
        kinds = [e["event"] for e in history]
        created = [e for e in history if e["event"] == "created"]
        deletes = [e for e in history if e["event"] == "deleted"]
        cached = [e for e in history if e["event"] == "cached" and e["key"] == facts["module_key"]]
        expect(len(created) == 1 and created[0]["lwp"] == worker, "created once, on the worker", history)
        maker = culprit(created[0])
        expect("gil_scoped_acquire" in maker["function"] and os.path.basename(maker["module"]) == "scenario_seed_host",
               "created by the host's own gil_scoped_acquire", created[0])
        expect(len(deletes) == 1 and deletes[0]["lwp"] == worker, "deleted once, on the worker", history)
        killer = culprit(deletes[0])
        expect("gil_scoped_acquire" in killer["function"] and os.path.basename(killer["module"]) == "scenario_seed_host",
               "deleted by the host's own gil_scoped_acquire", deletes[0])
        expect(cached and cached[0]["lwp"] == worker and facts["module_id"] in (cached[0]["source"] or ""),
               "cached in seed_module's record (key %d)" % facts["module_key"], history)
        expect(cached[0]["seq"] < deletes[0]["seq"], "cached before it was deleted", history)
        uses_after = [e for e in history if e["event"] == "used" and e["seq"] > deletes[0]["seq"]]
        expect(uses_after and all(e["lwp"] == worker for e in uses_after), "used again after its deletion, on the worker", history)
        expect(any("seed_module" in os.path.basename(f["module"]) for f in uses_after[-1]["frames"]),
               "the use after deletion comes from seed_module", uses_after[-1])
        expect(kinds.index("created") < kinds.index("deleted"), "created before deleted", kinds)
        # "At the end of the first file": the worker's first thread state is the one deleted, and it
        # was deleted before the worker made its second (file 2's).
        log = load(saved)
        made = sorted((e for e in log["events"] if e["event"] == "created" and e["lwp"] == worker), key=lambda e: e["seq"])
        expect(len(made) >= 2 and made[0]["tstate"] == deleted and made[0]["seq"] < deletes[0]["seq"] < made[1]["seq"],
               "the thread state of file 1, deleted before file 2's was made", made)
        flat = " ".join(l.strip() for l in text.splitlines())
        host = "(scenario_seed_host: pybind11 key %d, cxxabi1002)" % facts["host_key"]
        expect("history: created by LWP %d in pybind11::gil_scoped_acquire::gil_scoped_acquire %s" % (worker, host) in flat and
               "deleted by LWP %d in pybind11::gil_scoped_acquire::dec_ref %s" % (worker, host) in flat and
               "after its deletion" in flat, "the history in the text:\n" + text)
        expect("cached in pybind11 key %d by pybind11::detail::get_internals (seed_module" % facts["module_key"] in flat,
               "the record that still caches it, in the text:\n" + text)
        show = between(out, "py-tstates-record show")
        expect("THREAD-STATE HISTORY" in show and deleted in show, "py-tstates-record show lists the events:\n" + show)
        print(text)
        if debugger == "gdb":
            # A core taken after the recorded run: the CLI tells the same history from the saved file.
            status, cli_text, err = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--exe", exe, "--history", saved])
            expect(status == 1, "the CLI finds the error: " + err)
            def history_words(t):
                lines = t.splitlines()
                start = next(i for i, l in enumerate(lines) if "history:" in l)
                end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith("."))
                return lines[start:end + 1]
            expect(history_words(cli_text) == history_words(text), "the same history words from the core:\n" + cli_text)
            status, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--exe", exe, "--history", saved, "--json"])
            cli_stale = [f for f in cli["findings"] if f["code"] == "stale-tstate"]
            expect(cli_stale and cli_stale[0].get("history") == history, "the same history in the CLI's JSON", cli_stale)
            # The core opened in gdb and in lldb, the saved file given to py-tstates-check: the same words.
            for name, got in (("gdb", on_core_gdb(args, exe, core, ["py-tstates-check --history " + saved])),
                              ("lldb", on_core_lldb(args, exe, core, ["py-tstates-check --history " + saved]))):
                expect(history_words(got) == history_words(text), "%s on the core: the same history words:\n%s" % (name, got))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def on_core_gdb(args, exe, core, commands):
    return debugger_batch.gdb(args.gdb_script, [exe, core], commands, timeout=TIMEOUT)[1]


def on_core_lldb(args, exe, core, commands):
    # -b: every command here reads the core, none stops a process; lldb stops at a command's error.
    return "\n".join(debugger_batch.lldb(args.plugin, ["--core", core, exe], commands, timeout=TIMEOUT)[1])


# --- migrate, coroutine, sub-interpreters -------------------------------------------------------

def recorded_run(args, debugger, program, environment=(), init=(), stop_at="main"):
    work = tempfile.mkdtemp(prefix="pytstates-history-")
    saved = os.path.join(work, "history.json")
    after = marked(debugger, "py-tstates-check --json", "py-tstates-check --json") + ["py-tstates-record save " + saved]
    argv = (gdb_argv(args, program, after, environment, init, stop_at) if debugger == "gdb" else
            lldb_argv(args, program, after, environment, init, stop_at))
    try:
        facts, out = session(argv, interrupt_at_ready=True)
        expect(debugger == "lldb" or "Traceback" not in out, "no Python traceback in gdb:\n" + out[-3000:])
        expect(os.path.exists(saved), "the history was saved:\n" + out[-3000:])
        return facts, as_json(between(out, "py-tstates-check --json")), load(saved), out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def migrate(args, debugger):
    facts, report, log, _ = recorded_run(args, debugger, [os.path.join(args.scenarios, "scenario_migrate_host")])
    t, a, b = facts["tstate"], facts["a_lwp"], facts["b_lwp"]
    created = events_of(log, t, "created")
    expect(len(created) == 1 and created[0]["lwp"] == a, "made on thread A", log["events"])
    uses = events_of(log, t, "used")
    on_a = [e for e in uses if e["lwp"] == a]
    on_b = [e for e in uses if e["lwp"] == b]
    expect(on_a and on_b and on_a[0]["seq"] < on_b[0]["seq"] and uses[-1]["lwp"] == b, "run on A, then on B", uses)
    expect(any(f["function"] == "threadB" for f in on_b[0]["frames"]), "taken by threadB", on_b[0])
    # Whether a finding names it depends on what the analysis can tell runs it (CPython 3.11 keeps
    # one current pointer for the process); any finding that does carries its history.
    for f in report["findings"]:
        if f["tstate"] == t and f["code"] in ("foreign-tstate", "shared-tstate", "stale-tstate", "invalid-gil-holder"):
            expect([e["lwp"] for e in f.get("history", []) if e["event"] == "created"] == [a], "its history: made by A", f)


def coroutine(args, debugger):
    facts, _, log, _ = recorded_run(args, debugger, [os.path.join(args.scenarios, "scenario_coroutine_host")])
    coroutine_events(facts, log)


def coroutine_events(facts, log):
    """What scenario_coroutine_host says it did, in the history: its coroutines' thread states made
    and switched to on the worker, the finished one deleted there, the worker's own deleted."""
    w, n = facts["worker_lwp"], facts["switches"]
    for name in ("suspended", "finished"):
        t = facts[name]
        created = events_of(log, t, "created", w)
        expect(len(created) == 1, "coroutine %s's thread state made on the worker" % name, log["events"])
        swaps = [e for e in events_of(log, t, "used", w) if e["function"] == "PyThreadState_Swap"]
        expect(len(swaps) == n, "switched to %d times, as the program did (%s)" % (n, name), swaps)
    deleted = events_of(log, facts["finished"], "deleted", w)
    expect(len(deleted) == 1 and any(f["function"] == "worker" for f in deleted[0]["frames"]),
           "the finished coroutine's thread state deleted by the worker", deleted)
    expect(not events_of(log, facts["suspended"], "deleted"), "the suspended one is not deleted", log["events"])
    own = events_of(log, facts["own"], "deleted", w)
    expect(own and any(f["function"] == "PyGILState_Release" for f in own[-1]["frames"]),
           "the worker's own thread state deleted through PyGILState_Release", own)


def subinterpreters(args, debugger):
    facts, _, log, _ = recorded_run(args, debugger, [os.path.join(args.scenarios, "scenario_subinterp_host")])
    for sub in facts["subs"]:
        main = events_of(log, sub["main_tstate"], "created", sub["lwp"])
        expect(len(main) == 1 and any(f["function"] == "runSub" for f in main[0]["frames"]),
               "the main interpreter's thread state made by runSub on LWP %d" % sub["lwp"], log["events"])
        made = events_of(log, sub["tstate"], "created", sub["lwp"])
        expect(len(made) == 1 and any(f["function"] == "Py_NewInterpreter" for f in made[0]["frames"]),
               "the sub-interpreter's thread state made in Py_NewInterpreter on LWP %d" % sub["lwp"], made)
        expect(events_of(log, sub["main_tstate"], "used", sub["lwp"]), "the main thread state used on its thread", log["events"])


# --- armed before run ---------------------------------------------------------------------------
# `py-tstates-record on` typed before `run`, as one types `break`: it arms; `off` disarms; once the
# program has loaded CPython (linked: at start; dlopen'ed: at that dlopen) the breakpoints are set
# and the history holds what the program says it did, from CPython's first thread state on.
# Front ends: gdb with the pybind11 module (pytstates.gdb), gdb through ctypes
# (share/pytstates/gdb/pytstates.py, PYTSTATES_CORE=ctypes), lldb's C++ plugin, lldb's Python front
# end (share/pytstates/lldb/pytstates.py; an lldb whose Python works).

ARMED = "recording armed for the next run: its breakpoints are set once the program has loaded CPython"
STARTED = "recording thread-state events through "

BEFORE_RUN = [("status-none", "py-tstates-record"), ("arm", "py-tstates-record on --frames 8"), ("disarm", "py-tstates-record off"),
              ("status-off", "py-tstates-record"), ("rearm", "py-tstates-record on --frames 8"), ("status-armed", "py-tstates-record")]


def armed_session(args, front, program):
    """One run with the recording armed before it: {tag: output} of each command (BEFORE_RUN,
    run, then at the stop at READY: status-on, check --json, the debugger's threads), the
    program's facts and the saved history."""
    work = tempfile.mkdtemp(prefix="pytstates-history-")
    saved = os.path.join(work, "history.json")
    after = [("status-on", "py-tstates-record"), ("check", "py-tstates-check --json"),
             ("threads", "info threads" if front.startswith("gdb") else "thread list"), ("save", "py-tstates-record save " + saved)]
    steps = BEFORE_RUN + [("run", "run")] + after
    env = None
    try:
        if front.startswith("gdb"):
            script = args.gdb_script if front == "gdb" else args.gdb_python_entry
            cmds = ["set pagination off", "set confirm off"]
            if front == "gdb-ctypes":
                env = scenario.offline_env()
                env["PYTSTATES_CORE"] = "ctypes"
                cmds += debugger_batch.marked("binding", "python import pytstates.core as c; print('binding=' + c.core.binding)")
            for tag, command in steps:
                cmds += debugger_batch.marked(tag, command)
            argv = ["gdb", "-q", "-batch", "-nx", "-ex", "source " + script]
            for c in cmds + ["kill"]:
                argv += ["-ex", c]
            argv += ["--args"] + program
        else:
            loader = "plugin load " + args.plugin if front == "lldb" else "command script import " + args.lldb_python_entry
            argv = [scenario.LLDB]
            for c in [loader] + [command for _, command in steps] + ["kill", "quit"]:
                argv += ["-o", c]
            argv += ["--"] + program
        facts, out = session(argv, interrupt_at_ready=True, env=env)
        # (lldb-14's own broken script interpreter prints tracebacks of its own: NOISE)
        expect(not any("Traceback" in l for l in out.splitlines() if not debugger_batch.NOISE.match(l)), "no Python traceback:\n" + out[-3000:])
        if front.startswith("gdb"):
            outputs = {tag: debugger_batch.between(out, tag) for tag, _ in steps}
            if front == "gdb-ctypes":
                expect("binding=ctypes" in debugger_batch.between(out, "binding"), "gdb drives the library through ctypes:\n" + out[-2000:])
        else:
            outputs = dict(zip([tag for tag, _ in steps], in_order(out, [command for _, command in steps])))
        expect(os.path.exists(saved), "the history was saved:\n" + out[-3000:])
        return facts, outputs, load(saved), out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def in_order(text, commands):
    """lldb: the output of each command in turn (a command may come twice: not a dict by command)."""
    got, current = [], None
    for line in text.splitlines():
        if debugger_batch.NOISE.match(line):
            continue
        if line.startswith("(lldb) "):
            command = line[len("(lldb) "):]
            if len(got) < len(commands) and command == commands[len(got)]:
                got.append([])
                current = got[-1]
                continue
            current = None
        elif current is not None:
            current.append(line)
    expect(len(got) == len(commands), "lldb ran %d of the %d commands:\n%s" % (len(got), len(commands), text[-4000:]))
    return ["\n".join(lines) for lines in got]


def check_armed_lines(front, outputs):
    """The lines the commands print before run and once the program runs."""
    def line(tag):
        return outputs[tag].strip()
    expect(line("status-none") == "recording off: nothing recorded", "%s: before `on`: %r" % (front, line("status-none")))
    expect(line("arm") == ARMED and line("rearm") == ARMED, "%s: `on` before run arms, in one line: %r" % (front, line("arm")))
    expect(line("disarm") == "recording disarmed", "%s: `off` disarms: %r" % (front, line("disarm")))
    expect(line("status-off") == "recording off: nothing recorded", "%s: disarmed: %r" % (front, line("status-off")))
    expect(line("status-armed") == "recording armed (waiting for the program to start and load CPython)",
           "%s: armed: %r" % (front, line("status-armed")))
    started = [l for l in outputs["run"].splitlines() if l.startswith(STARTED)]
    expect(len(started) == 1, "%s: the breakpoints set once, when the program loaded CPython:\n%s" % (front, outputs["run"][-3000:]))
    expect(line("status-on").startswith("recording on: ") and " breakpoints, " in line("status-on"),
           "%s: recording: %r" % (front, line("status-on")))
    for tag in ("arm", "status-armed"):
        print("%s before run: %s" % (front, line(tag)))
    print("%s at start: %s" % (front, started[0][:160] + ("..." if len(started[0]) > 160 else "")))
    print("%s at the stop: %s" % (front, line("status-on")))


def debugger_lwps(front, text):
    """The LWPs the debugger itself lists (gdb's `info threads`: "LWP N"; lldb's `thread list`: tid = N)."""
    pattern = r"\(LWP (\d+)\)" if front.startswith("gdb") else r"tid = (\d+)"
    return {int(n) for n in re.findall(pattern, text)}


def first_tstate_made_at_start(front, log, main_lwp):
    """CPython's first thread state, made in Py_Initialize* on the main thread: the recording was
    in place before the program made any."""
    first = min(log["events"], key=lambda e: e["seq"])
    expect(first["event"] == "created" and first["lwp"] == main_lwp and
           any(f["function"].startswith("Py_Initialize") or f["function"] == "main" for f in first["frames"]),
           "%s: the first event is the main thread's first thread state, made in Py_Initialize" % front, first)
    return first


def report_tstates(report):
    return {(t.get("lwp"), t.get("address")) for r in report["runtimes"] for i in r["interpreters"] for t in i["tstates"]}


def armed(args, front):
    # libpython linked: its breakpoints set at start.
    facts, outputs, log, _ = armed_session(args, front, [os.path.join(args.scenarios, "scenario_coroutine_host")])
    check_armed_lines(front, outputs)
    coroutine_events(facts, log)
    first_tstate_made_at_start(front, log, facts["pid"])
    expect(facts["worker_lwp"] in debugger_lwps(front, outputs["threads"]), "%s lists the worker LWP %d" % (front, facts["worker_lwp"]),
           outputs["threads"])
    print("%s: coroutine host: %d events kept; the worker's coroutine thread states made and switched to %d times each, on LWP %d" % (
        front, len(log["events"]), facts["switches"], facts["worker_lwp"]))
    # libpython dlopen'ed by the program after it started: its breakpoints set at that dlopen.
    program = [os.path.join(args.scenarios, "scenario_dlopen_tls_host"), linked_libpython(args)]
    facts, outputs, log, _ = armed_session(args, front, program)
    check_armed_lines(front, outputs)
    expect(any(w.startswith(program[1] + " ") for w in log["watched"]), "%s: the dlopen'ed %s is watched" % (front, program[1]), log["watched"])
    first = first_tstate_made_at_start(front, log, facts["main_lwp"])
    expect(first["tstate"] == facts["main_tstate"], "%s: the main thread state the program names" % front, (first, facts))
    holder, h = facts["holder_lwp"], facts["holder_tstate"]
    made = events_of(log, h, "created", holder)
    if not ensure_calls_creator(program[1]):
        # The build creates it inside PyGILState_Ensure, which gdb's disassembly shows calling no
        # creation function (pyenv's and Debian's 3.13): no breakpoint sees the creation, and the
        # recording's first event of it is the caching, in holder().
        first = [e for e in log["events"] if e["tstate"] == h][:1]
        expect(not made and first and first[0]["event"] == "cached" and first[0]["lwp"] == holder and
               any(f["function"] == "holder" for f in first[0]["frames"]),
               "%s: PyGILState_Ensure creates inline: the holder's first event is its caching by holder() on LWP %d"
               % (front, holder), log["events"])
    else:
        expect(len(made) == 1 and any(f["function"] == "holder" for f in made[0]["frames"]),
               "%s: the holder's thread state made by holder() on LWP %d" % (front, holder), log["events"])
    expect(events_of(log, h, "used", holder), "%s: and put to use there" % front, log["events"])
    # gdb's (lldb's) own reading at the stop: the holder's thread, and its thread state as
    # py-tstates-check reads it from the process.
    expect({facts["main_lwp"], holder} <= debugger_lwps(front, outputs["threads"]), "%s lists the main and holder LWPs" % front,
           outputs["threads"])
    expect((holder, h) in report_tstates(as_json(outputs["check"])), "%s: py-tstates-check reads the holder's thread state" % front,
           report_tstates(as_json(outputs["check"])))
    print("%s: dlopen host: %d events; main %s made on LWP %d in Py_Initialize, holder %s made and used on LWP %d" % (
        front, len(log["events"]), facts["main_tstate"], facts["main_lwp"], h, holder))


def linked_libpython(args):
    """The libpython the scenarios link (ldd of one of them): the one the dlopen host loads."""
    out = subprocess.run(["ldd", os.path.join(args.scenarios, "scenario_coroutine_host")], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    paths = [l.split("=>")[1].split("(")[0].strip() for l in out.splitlines() if "libpython" in l and "=>" in l]
    expect(paths and os.path.exists(paths[0]), "the scenarios' libpython, from ldd:\n" + out)
    return os.path.realpath(paths[0])


# --- every CPython version ----------------------------------------------------------------------

LIFECYCLE = ("tests", "scenarios", "history", "lifecycle.py")


class Interpreter:
    """One CPython under test, as gdb or lldb starts it: pyenv's 3.8.18 ... 3.13.0 (shared libpython with
    DWARF), Debian unstable's 3.14 / 3.15 (static executable; with_debug_files: its DWARF from
    python3.1X-dbg, else the stripped executable alone, as Debian installs it) and the free-threaded
    3.13t (scripts/python-freethreaded). argv, environment, init (gdb -iex; lldb's -O in
    sid.lldb_init), stop_at, module (the
    file CPython is in) and what the program must say of itself (series, free-threaded)."""

    def __init__(self, args, name, with_debug_files=True):
        self.name, self.environment, self.init, self.stop_at = name, [], [], "main"
        self.free_threaded, self.sid, self.exact = False, None, False
        if name in ("3.14", "3.15"):
            import sid_python
            cache = args.python314_dir if name == "3.14" else args.python315_dir
            try:
                root = sid_python.unpacked_root(args.source_dir, name, cache)
            except RuntimeError as e:
                expect(False, str(e))
            self.sid = sid_python.SidPython(root, name, with_debug_files)
            self.series, self.python = name, self.sid.executable
            self.module = self.python
            self.environment, self.init, self.stop_at = self.sid.environment, self.sid.gdb_init, self.sid.stop_at
        elif name == "3.13t":
            out = subprocess.run([os.path.join(args.source_dir, "scripts", "python-freethreaded"), "3.13"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            expect(out.returncode == 0, "no free-threaded CPython 3.13: " + out.stderr.decode(errors="replace").strip())
            prefix = out.stdout.decode().strip().splitlines()[-1]
            self.series, self.free_threaded = "3.13", True
            self.python = os.path.join(prefix, "bin", "python3.13t")
            self.module = os.path.realpath(os.path.join(prefix, "lib", "libpython3.13t.so.1.0"))
        else:
            prefix = pyenv.require_prefix(name)  # NOT RUN (exit 77) where pyenv has not this release
            self.series, self.exact = ".".join(name.split(".")[:2]), True
            self.python = os.path.join(prefix, "bin", "python3")
            self.module = os.path.join(prefix, "lib", "libpython%s.so.1.0" % self.series)
            expect(os.path.exists(self.module), "pyenv's CPython %s is missing: %s" % (name, self.module))

    def is_it(self, facts):
        """The program ran on this interpreter (pyenv's: this very release)."""
        version = facts["version"]
        expect(version == self.name if self.exact else version.startswith(self.series + "."),
               "the interpreter under test is %s" % self.name, facts)
        expect(facts.get("free_threaded", False) == self.free_threaded,
               "%s: free-threaded (the GIL disabled) is %s" % (self.name, self.free_threaded), facts)

    def record(self, args, environment=(), debugger="gdb"):
        script = os.path.join(args.source_dir, *LIFECYCLE)
        environment = list(self.environment) + list(environment)
        init = self.init if debugger == "gdb" else (self.sid.lldb_init if self.sid else [])
        facts, _, log, out = recorded_run(args, debugger, [self.python, script], environment, init, self.stop_at)
        self.is_it(facts)
        for line in out.splitlines():  # what `on` said, in the test's log
            if line.startswith(("recording thread-state events", "not recorded: ")):
                print(line)
        return facts, log, out

    def close(self):
        if self.sid is not None:
            self.sid.close()


CREATORS = ("PyThreadState_New", "_PyThreadState_New", "_PyThreadState_Prealloc", "_PyThreadState_NewBound", "new_threadstate")


def ensure_calls_creator(module):
    """Whether gdb's disassembly of the module's PyGILState_Ensure calls (or tail-calls) a thread
    state's creation function."""
    out = subprocess.run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-ex", "disassemble PyGILState_Ensure", module],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120).stdout
    expect("End of assembler dump" in out, "gdb disassembles PyGILState_Ensure in %s" % module, out[-2000:])
    return re.search(r"\b(?:call|jmp)\s.*<(?:%s)(?:\.[a-z0-9.]+)?(?:@plt)?(?:\+\d+)?>" % "|".join(CREATORS), out) is not None


def version(args, name, debugger="gdb"):
    target = Interpreter(args, name)
    try:
        facts, log, out = target.record(args, debugger=debugger)
    finally:
        target.close()
    for t in facts["threads"]:
        lives = [e for e in log["events"] if e["tstate"] == t["tstate"]]
        made = [e for e in lives if e["event"] == "created" and e["lwp"] == facts["main_lwp"]]
        ran = [e for e in lives if e["event"] == "used" and e["lwp"] == t["lwp"]]
        expect(made and ran and made[0]["seq"] < ran[0]["seq"], "%s: made by the main thread, run by LWP %d" % (name, t["lwp"]), lives)
        if t["ended"]:
            gone = [e for e in lives if e["event"] == "deleted" and e["lwp"] == t["lwp"] and e["seq"] > ran[0]["seq"]]
            expect(gone, "%s: the ended thread's state deleted by itself" % name, lives)
    expect(not log["cannot"], "%s: every lifecycle function has a symbol" % name, log["cannot"])
    expect(any(os.path.basename(target.module) in w for w in log["watched"]), "%s: %s is watched" % (name, target.module), log["watched"])
    print("%s (%s): %d events from %d breakpoint hits, %d thread states" % (name, debugger, len(log["events"]), log["hits"],
                                                                      len({e["tstate"] for e in log["events"]})))


def stripped(args, name, debugger="gdb"):
    """Without symbols for CPython's internal functions: pyenv's or the free-threaded libpython
    copied and stripped (strip -s, no debug file), or Debian's static python3.14 / python3.15
    without python3.1X-dbg (only its dynamic symbols). What has no symbol is said at `on` and kept in the saved file, and a
    thread's end is seen as the clear before it."""
    environment, work = [], None
    if name in ("3.14", "3.15"):
        target = Interpreter(args, name, with_debug_files=False)
        lib = target.module
    else:
        target = Interpreter(args, name)
        work = tempfile.mkdtemp(prefix="pytstates-stripped-")
        lib = os.path.join(work, os.path.basename(target.module))
        shutil.copy(target.module, lib)
        subprocess.run(["strip", "-s", lib], check=True)
        environment = ["LD_LIBRARY_PATH=" + work]
    try:
        facts, log, out = target.record(args, environment, debugger)
    finally:
        target.close()
        if work:
            shutil.rmtree(work, ignore_errors=True)
    expect(any(lib in w for w in log["watched"]), "the stripped copy is the one watched", log["watched"])
    missing = "_PyThreadState_DeleteCurrent has no symbol"
    expect(any(missing in c for c in log["cannot"]) and "not recorded: %s: %s" % (os.path.basename(lib), missing) in out,
           "`on` says what cannot be recorded", log["cannot"])
    # Creation still seen: through the exported creators, and (Debian's static 3.14, built with
    # LTO) at the returns of the unnamed new_threadstate they tail-call, found by its FDE.
    for t in facts["threads"]:
        made = [e for e in log["events"] if e["tstate"] == t["tstate"] and e["event"] == "created" and e["lwp"] == facts["main_lwp"]]
        expect(made, "%s stripped: LWP %d's thread state made by the main thread" % (name, t["lwp"]), log["events"])
    ended = [t for t in facts["threads"] if t["ended"]][0]
    lives = [e for e in log["events"] if e["tstate"] == ended["tstate"]]
    expect([e["event"] for e in lives if e["lwp"] == ended["lwp"] and e["event"] in ("cleared", "deleted")][-1:] == ["cleared"],
           "the ended thread's state: its clear seen, its deletion not", lives)
    print("%s stripped (%s): not recorded:\n  %s" % (name, debugger, "\n  ".join(log["cannot"])))


# --- bad input ----------------------------------------------------------------------------------

def errors(args):
    # No program at all: `on` arms (for a program loaded later), a bad option is refused as after run.
    _, out = debugger_batch.gdb(args.gdb_script, [], ["py-tstates-record on", "py-tstates-record show", "py-tstates-record bogus",
                                                      "py-tstates-record on --frames 0"], timeout=60)
    expect(ARMED in out and "nothing recorded" in out and "expected on, off" in out and
           "py-tstates-record: --frames needs a number" in out and "Traceback" not in out, "gdb: one line each\n" + out)
    out = ""
    for command in ("py-tstates-record on", "py-tstates-record show", "py-tstates-record on --frames 0"):  # lldb stops at an error
        out += "\n".join(debugger_batch.lldb(args.plugin, [], [command], timeout=60)[1]) + "\n"
    expect(ARMED in out and "nothing recorded" in out and "py-tstates-record: --frames needs a number" in out, "lldb: one line each\n" + out)
    work = tempfile.mkdtemp(prefix="pytstates-history-")
    try:
        bad = os.path.join(work, "bad.json")
        with open(bad, "w") as f:
            f.write('{"events": []}')
        facts, core = scenario.take_core([os.path.join(args.scenarios, "scenario_seed_host"), "svr2", "pause"], "gcore", workdir=work)
        for history, words in ((bad, "not a history saved by py-tstates-record"), (os.path.join(work, "none.json"), "cannot read")):
            status, _, err = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--history", history])
            expect(status == 2 and words in err and len(err.strip().splitlines()) == 1, "one line and status 2: " + err)
        # --history is check's: tstates and internals give none of the findings a history is told in.
        for command in ("tstates", "internals"):
            status, _, err = scenario.run_pytstates(args.pytstates, [command, "--core", core, "--history", bad])
            expect(status == 2 and "--history is check's: %s gives none of the findings" % command in err and
                   len(err.strip().splitlines()) == 1, "%s --history: one line and status 2: %s" % (command, err))
        # The same words in gdb and lldb on the core.
        exe = os.path.join(args.scenarios, "scenario_seed_host")
        none = os.path.join(work, "none.json")
        out = on_core_gdb(args, exe, core, ["py-tstates-check --history " + none, "py-tstates --history " + bad,
                                            "py-tstates-check --history " + bad, "py-tstates-record on"])
        on_core = "py-tstates-record: no running process: a core cannot be recorded"
        expect("py-tstates-check: cannot read the history file " + none in out and
               "py-tstates: --history is check's: tstates gives none" in out and
               "not a history saved by py-tstates-record" in out and on_core in out and "Traceback" not in out,
               "gdb: one line each\n" + out)
        out = ""
        for command in ("py-tstates-check --history " + none, "pybind-internals --history " + bad,  # lldb -b stops at an error
                        "py-tstates-record on"):
            out += on_core_lldb(args, exe, core, [command])
        expect("cannot read the history file " + none in out and "--history is check's: internals gives none" in out and on_core in out,
               "lldb: one line each\n" + out)
        # A history of another process: told, not joined.
        other = os.path.join(work, "other.json")
        with open(other, "w") as f:
            json.dump({"pytstates_history": 1, "pid": facts["pid"] + 1, "events": [
                {"seq": 1, "event": "created", "tstate": facts["deleted_tstate"], "lwp": 1, "frames": []}]}, f)
        status, report, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--history", other, "--json"])
        expect(status == 1 and not any(f.get("history") for f in report["findings"]) and
               any("recorded in process" in w for w in report.get("warnings", [])), "another process's history is not joined", report)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script", required=True)
    p.add_argument("--plugin", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--source-dir", required=True)
    p.add_argument("--python314-dir", default="", help="where scripts/debian-python unpacks 3.14")
    p.add_argument("--python315-dir", default="", help="where scripts/debian-python unpacks 3.15")
    p.add_argument("--gdb-python-entry", default="", help="share/pytstates/gdb/pytstates.py (gdb-ctypes.armed)")
    p.add_argument("--lldb-python-entry", default="", help="share/pytstates/lldb/pytstates.py (lldb-python.armed)")
    p.add_argument("case")
    args = p.parse_args()
    for name in ("pytstates", "gdb_script", "plugin", "scenarios", "source_dir", "python314_dir", "python315_dir", "gdb_python_entry",
                 "lldb_python_entry"):
        if getattr(args, name):
            setattr(args, name, os.path.abspath(getattr(args, name)))
    cases = {"gdb.seed-crash": lambda: seed_crash(args, "gdb"), "lldb.seed-crash": lambda: seed_crash(args, "lldb"),
             "gdb.migrate": lambda: migrate(args, "gdb"), "lldb.migrate": lambda: migrate(args, "lldb"),
             "gdb.coroutine": lambda: coroutine(args, "gdb"), "lldb.coroutine": lambda: coroutine(args, "lldb"),
             "gdb.subinterpreters": lambda: subinterpreters(args, "gdb"), "lldb.subinterpreters": lambda: subinterpreters(args, "lldb"),
             "errors": lambda: errors(args)}
    for front in ("gdb", "gdb-ctypes", "lldb", "lldb-python"):
        cases[front + ".armed"] = (lambda f: lambda: armed(args, f))(front)
    if args.case.startswith("stripped-"):
        stripped(args, args.case[len("stripped-"):])
    elif args.case.startswith("version-"):
        version(args, args.case[len("version-"):])
    elif args.case.startswith("lldb.stripped-"):
        stripped(args, args.case[len("lldb.stripped-"):], "lldb")
    elif args.case.startswith("lldb.version-"):
        version(args, args.case[len("lldb.version-"):], "lldb")
    else:
        cases[args.case]()
    print("PASS history " + args.case)


if __name__ == "__main__":
    main()
