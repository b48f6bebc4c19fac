#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The gdb commands (py-tstates, pybind-internals, py-tstates-check) in real gdb (-batch -nx) on
real cores and processes, held against the CLI's JSON for the same core and against what the
scenarios printed."""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import json_contract  # noqa: E402
import findings_cases  # noqa: E402
import locals_facts  # noqa: E402
import long_paths  # noqa: E402
import scenario  # noqa: E402
from debugger_batch import between, gdb, marked  # noqa: E402
from findings_cases import expect  # noqa: E402


def gdb_thread_numbers(text):
    return {int(m.group(2)): int(m.group(1)) for m in re.finditer(r"^\*?\s*(\d+)\s+Thread 0x[0-9a-f]+ \(LWP (\d+)\)", text, re.M)}


def without_debugger(report):
    for row in report["threads"]:
        row.pop("debugger_thread", None)
    report["target"].pop("stopped_ms", None)
    report["target"].pop("read_after_resume", None)  # a live stop's own account
    return report


def seed_core(args):
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr2", "pause"], "gcore")
    try:
        cmds = (marked("threads", "info threads") + marked("before", "thread") + ["thread 2", "frame 3"] +
                marked("sel1", "thread") + marked("fsel1", "frame") +
                marked("json", "py-tstates-check --json") + marked("text", "py-tstates-check") +
                marked("internals", "pybind-internals --types --json") + marked("tstates", "py-tstates --frames 2 --json") +
                marked("sel2", "thread") + marked("fsel2", "frame"))
        _, out = gdb(args.gdb_script, [exe, core], cmds)
        ours = json_contract.loads(between(out, "json"))
        status, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
        expect(status == 1, "the CLI finds the error")
        numbers = gdb_thread_numbers(between(out, "threads"))
        expect({r["lwp"]: r.get("debugger_thread") for r in ours["threads"]} == numbers,
               "gdb's thread numbers beside every LWP: %s" % numbers, ours)
        expect(without_debugger(ours) == without_debugger(cli), "gdb and the CLI report the same facts")
        stale = [f for f in ours["findings"] if f["code"] == "stale-tstate"]
        expect([(f["lwp"], f["tstate"]) for f in stale] == [(facts["worker_lwp"], facts["deleted_tstate"])],
               "the stale pointer on the worker", ours)
        text = between(out, "text")
        worker_thread = numbers[facts["worker_lwp"]]
        expect("LWP %d (thread %d)" % (facts["worker_lwp"], worker_thread) in text and facts["deleted_tstate"] in text,
               "the text names the pointer and the gdb thread to jump to:\n" + text)
        internals = json_contract.loads(between(out, "internals"))
        status, cli_internals, _ = scenario.run_pytstates(args.pytstates, ["internals", "--core", core, "--json", "--types"])
        expect(without_debugger(internals)["internals"] == without_debugger(cli_internals)["internals"], "pybind-internals --types")
        tstates = json_contract.loads(between(out, "tstates"))
        expect("internals" not in tstates and tstates["runtimes"] == scenario.run_pytstates(
            args.pytstates, ["tstates", "--core", core, "--json", "--frames", "2"])[1]["runtimes"], "py-tstates --frames 2")
        expect(between(out, "sel1") == between(out, "sel2") and between(out, "fsel1") == between(out, "fsel2"),
               "the selected thread and frame are unchanged:\n%s\n%s" % (between(out, "sel1"), between(out, "sel2")))
        expect("Thread 2" in between(out, "sel1") or "thread is 2" in between(out, "sel1"), "thread 2 was selected")
    finally:
        scenario.cleanup(core)


def crash_cores(args):
    """The seed's crash and its first reproduction, the kernel's cores: the crash section in gdb
    names the thread (gdb's number), the signal, the innermost function and the finding, as the
    CLI does; --native too."""
    cases = (("scenario_seed_host", ["svr2", "crash"], "take_gil", "deleted_tstate", {"stale-tstate"}),
             ("scenario_first_repro_host", ["crash"], "tstate_delete_common", "t0", {"stale-tstate", "invalid-gil-holder"}))
    for name, argv, top, pointer, codes in cases:
        exe = os.path.join(args.scenarios, name)
        facts, core = scenario.take_core([exe] + argv, "crash")
        try:
            cmds = marked("threads", "info threads") + marked("json", "py-tstates-check --json") + \
                marked("text", "py-tstates-check") + marked("native", "py-tstates -n -j")
            _, out = gdb(args.gdb_script, [exe, core], cmds)
            ours = json_contract.loads(between(out, "json"))
            text = between(out, "text")
            findings_cases.check_crash(ours, text, facts["worker_lwp"], 11, top, facts[pointer], codes, "tstate")
            number = gdb_thread_numbers(between(out, "threads"))[facts["worker_lwp"]]
            expect("CRASH  LWP %d (thread %d)  SIGSEGV" % (facts["worker_lwp"], number) in text, "gdb's thread number:\n" + text)
            _, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
            expect(without_debugger(ours) == without_debugger(cli), "gdb and the CLI report the same facts", ours)
            native = json_contract.loads(between(out, "native"))
            _, cli_native, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--native", "--core", core, "--json"])
            expect(without_debugger(native)["threads"] == without_debugger(cli_native)["threads"],
                   "py-tstates -n: the same native stacks as the CLI's", native)
        finally:
            scenario.cleanup(core)


def live_attach(args):
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    with scenario.running([exe, "svr2", "pause"]) as (proc, facts):
        _, out = gdb(args.gdb_script, ["-p", str(proc.pid)], marked("json", "py-tstates-check --json"))
        ours = json_contract.loads(between(out, "json"))
        expect(ours["target"]["kind"] == "live" and ours["target"]["pid"] == proc.pid, "a live target", ours)
        stale = [(f["lwp"], f["tstate"]) for f in ours["findings"] if f["code"] == "stale-tstate"]
        expect(stale == [(facts["worker_lwp"], facts["deleted_tstate"])], "the stale pointer, live", ours)
        expect(scenario.still_answers(proc), "the process runs on after gdb detached")


def terminal_width(args):
    """The text as wide as gdb's (its width, which gdb takes from the terminal), as the CLI's is:
    gdb on a 72-column terminal fits every line of py-tstates to it, a deep file's path cut at the
    front; gdb -batch into a pipe (width unlimited) and a typed --width 0 leave it whole."""
    with long_paths.deep_program() as (proc, facts):
        pid = str(proc.pid)
        _, piped = gdb(args.gdb_script, ["-p", pid], marked("text", "py-tstates"))
        argv = ["gdb", "-q", "-nx", "-iex", "set pagination off", "-iex", "set confirm off", "-ex", "source " + args.gdb_script]
        for c in marked("text", "py-tstates") + marked("typed", "py-tstates --width 0") + ["detach", "quit"]:
            argv += ["-ex", c]
        on_tty = long_paths.on_terminal(argv + ["-p", pid], 72)
        expect(proc.poll() is None, "the program runs on after gdb detached")
    print("gdb -batch | cat: " + long_paths.check_frame(between(piped, "text"), facts, None, "gdb -batch into a pipe").strip())
    print("gdb on 72 columns: " + long_paths.check_frame(between(on_tty, "text"), facts, 72, "gdb on a 72-column terminal").strip())
    long_paths.check_frame(between(on_tty, "typed"), facts, None, "gdb on a terminal, --width 0 typed")


def through_gdbserver(args):
    """gdb connected to gdbserver: memory, threads and registers all come over the remote protocol."""
    import socket
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    proc, facts = scenario.start([exe, "svr2", "pause"])
    server = None
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(["gdbserver", "--attach", "127.0.0.1:%d" % port, str(proc.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, out = gdb(args.gdb_script, [exe], ["target remote 127.0.0.1:%d" % port] + marked("json", "py-tstates-check --json") + ["detach"])
        ours = json_contract.loads(between(out, "json"))
        stale = [(f["lwp"], f["tstate"]) for f in ours["findings"] if f["code"] == "stale-tstate"]
        expect(stale == [(facts["worker_lwp"], facts["deleted_tstate"])], "the stale pointer through gdbserver", ours)
        rows = {r["lwp"]: r["pthread"] for r in ours["threads"]}
        expect(rows.get(facts["worker_lwp"]) == facts["worker_pthread"], "the worker's fs_base through gdbserver", ours)
        server.wait(timeout=30)
        expect(scenario.still_answers(proc), "the process runs on after gdbserver detached")
    finally:
        if server and server.poll() is None:
            server.kill()
            server.wait()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def started_by_gdb(args):
    exe = os.path.join(args.scenarios, "scenario_embed_host")
    cmds = ["set pagination off", "set confirm off", "break blockHoldingTheGil", "run < /dev/null"] + \
        marked("thread", "thread") + marked("json", "py-tstates --json") + ["kill"]
    _, out = gdb(args.gdb_script, [exe], cmds)
    ours = json_contract.loads(between(out, "json"))
    lwp = int(re.search(r"\(LWP (\d+)\)", between(out, "thread")).group(1))
    interp = ours["runtimes"][0]["interpreters"][0]
    holder = [t for t in interp["tstates"] if t["lwp"] == lwp]
    expect(len(holder) == 1 and interp["gil_holder"] == holder[0]["address"] and holder[0]["holds_gil"],
           "the thread stopped at the breakpoint holds the GIL", ours)
    expect(holder[0]["frames"][0]["function"] == "hold_the_gil", "its Python frame", ours)
    expect(len(interp["tstates"]) == 3, "three thread states", ours)


def locals_core(args):
    """py-tstates --locals on a core of the suite's python3 (objects_program.py): the program's own
    account of waiter's locals, the CLI's JSON for the same core, and CPython's own py-locals in
    the same gdb (python3.X-dbg's libpython gdb script) or, where that cannot read the frame, gdb's
    Python API through CPython's DWARF on the same core (locals_facts.gdb_waiter_locals)."""
    python = scenario.PYTHON
    facts, core = scenario.take_core([python, locals_facts.PROGRAM], "gcore")
    try:
        _, out = gdb(args.gdb_script, [python, core], marked("json", "py-tstates --locals --json") +
                     marked("text", "py-tstates --locals") + ["py-up", "py-up"] + marked("pylocals", "py-locals"))
        ours = json_contract.loads(between(out, "json"), "py-tstates --locals --json")
        problems = locals_facts.json_problems(ours, facts) + locals_facts.text_problems(between(out, "text"), facts)
        said, reading, text = locals_facts.gdb_waiter_locals(core, python, between(out, "pylocals"))
        gdb_said = locals_facts.gdb_problems(ours, said, reading)
        problems += gdb_said + (["what gdb printed: " + text[-1500:]] if gdb_said else [])
        status, cli, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--json", "--locals"])
        expect(locals_facts.all_frames(ours) == locals_facts.all_frames(cli), "gdb and the CLI report the same frames and locals", ours)
        expect(not problems, "py-tstates --locals: " + "; ".join(problems))
        print("waiter's %d locals as the program gives them; %s gave %d, its literals agree" % (len(facts["waiter_locals"]), reading, len(said)))
    finally:
        scenario.cleanup(core)


def locals_live(args):
    """py-tstates --locals in gdb attached to a running python3: the program's own account."""
    with scenario.running([scenario.PYTHON, locals_facts.PROGRAM]) as (proc, facts):
        _, out = gdb(args.gdb_script, ["-p", str(proc.pid)], marked("json", "py-tstates --locals --json"))
        ours = json_contract.loads(between(out, "json"), "py-tstates --locals --json")
        problems = locals_facts.json_problems(ours, facts)
        expect(not problems, "py-tstates --locals, live: " + "; ".join(problems))
        expect(proc.poll() is None, "the program runs on after gdb detached")


def errors(args):
    _, out = gdb(args.gdb_script, [], marked("none", "py-tstates") + marked("help", "help py-tstates") + marked("bad", "py-tstates-check --frames x"))
    expect("no process or core" in out and "Traceback" not in out, "no inferior: one line\n" + out)
    expect("PYTHREADSTATE" in between(out, "help") and "--frames" in between(out, "help"), "help py-tstates explains the columns")
    facts, core = scenario.take_core(["/bin/sh", "-c", 'echo "FACTS {}"; echo READY; exec sleep 100'], "gcore")
    try:
        _, out = gdb(args.gdb_script, ["/bin/sleep", core], marked("e", "py-tstates") + marked("o", "pybind-internals --bogus"))
        expect("no initialised CPython runtime" in between(out, "e") and "Traceback" not in out, "a non-Python core\n" + out)
        expect("unknown argument" in between(out, "o"), "a bad option")
    finally:
        scenario.cleanup(core)


def installed(args):
    """cmake --install lays out a tree gdb loads from with one line."""
    import tempfile, shutil
    prefix = tempfile.mkdtemp(prefix="pytstates-install-")
    try:
        subprocess.run(["cmake", "--install", args.build_dir, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
        _, out = gdb("%s/share/pytstates/gdb/pytstates.py" % prefix, [], ["help py-tstates", "py-tstates"], timeout=60)
        expect("PYTHREADSTATE" in out and "no process or core" in out and "Traceback" not in out, "installed gdb commands\n" + out)
        expect(os.path.exists(os.path.join(prefix, "bin", "pytstates")) and
               os.path.exists(os.path.join(prefix, "lib", "pytstates", "lldb", "libpytstates-lldb.so")), "the CLI and the lldb plugin installed")
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--build-dir")
    p.add_argument("case", choices=["seed-core", "crash-cores", "live-attach", "started-by-gdb", "errors", "installed", "gdbserver",
                                    "locals-core", "locals-live", "terminal-width"])
    args = p.parse_args()
    {"seed-core": seed_core, "crash-cores": crash_cores, "live-attach": live_attach, "started-by-gdb": started_by_gdb, "errors": errors,
     "installed": installed, "gdbserver": through_gdbserver, "locals-core": locals_core, "locals-live": locals_live,
     "terminal-width": terminal_width}[args.case](args)
    print("PASS gdb " + args.case)


if __name__ == "__main__":
    main()
