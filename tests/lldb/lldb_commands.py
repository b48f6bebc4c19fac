#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The lldb plugin's commands in real lldb (-b: the suite's default lldb, lldb-14 on Debian 12, lldb-19 on 13) on real cores and live processes, held against
the CLI's JSON for the same core and against what the scenarios printed."""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import findings_cases  # noqa: E402
import locals_facts  # noqa: E402
import long_paths  # noqa: E402
import scenario  # noqa: E402
from debugger_batch import as_json, lldb, sections  # noqa: E402
from findings_cases import expect  # noqa: E402


def lldb_thread_indexes(text):
    return {int(m.group(2)): int(m.group(1)) for m in re.finditer(r"thread #(\d+): tid = (\d+)", text)}


def without_debugger(report):
    for row in report["threads"]:
        row.pop("debugger_thread", None)
    report["target"].pop("stopped_ms", None)
    report["target"].pop("read_after_resume", None)  # a live stop's own account
    report.pop("warnings", None)
    if report["target"].get("crash"):  # lldb 14 gives the signal of a core, not its siginfo
        for key in ("code", "code_name", "fault_address", "sender_pid"):
            report["target"]["crash"].pop(key, None)
    return report


def seed_core(args, kind):
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr2", "crash" if kind == "crash" else "pause"], kind)
    try:
        _, lines = lldb(args.plugin, ["--core", core, exe], ["thread list", "py-tstates-check --json", "py-tstates-check",
                                                      "pybind-internals --types --json", "py-tstates -j -f 1"])
        out = sections(lines)
        ours = as_json(out["py-tstates-check --json"])
        status, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
        indexes = lldb_thread_indexes(out["thread list"])
        expect({r["lwp"]: r.get("debugger_thread") for r in ours["threads"]} == indexes,
               "lldb's thread indexes beside every LWP: %s" % indexes, ours)
        # struct pthread from glibc's thread lists (lldb 14 has no fs_base) equals NT_PRSTATUS's fs_base
        expect(without_debugger(ours) == without_debugger(cli), "lldb and the CLI report the same facts", ours)
        stale = [(f["lwp"], f["tstate"]) for f in ours["findings"] if f["code"] == "stale-tstate"]
        expect((facts["worker_lwp"], facts["deleted_tstate"]) in stale, "the stale pointer on the worker", ours)
        text = out["py-tstates-check"]
        expect("LWP %d (thread %d)" % (facts["worker_lwp"], indexes[facts["worker_lwp"]]) in text and facts["deleted_tstate"] in text,
               "the text names the pointer and the lldb thread to select:\n" + text)
        short = as_json(out["py-tstates -j -f 1"])
        expect("internals" not in short and all(len(t["frames"]) <= 1 for rt in short["runtimes"] for i in rt["interpreters"]
                                                for t in i["tstates"]), "short options, as lldb's own commands take them", short)
        if kind == "crash":
            findings_cases.check_crash(ours, out["py-tstates-check"], facts["worker_lwp"], 11, "take_gil",
                                       facts["deleted_tstate"], {"stale-tstate"}, "tstate")
            expect("CRASH  LWP %d (thread %d)  SIGSEGV" % (facts["worker_lwp"], indexes[facts["worker_lwp"]]) in text,
                   "the crash line with lldb's thread index\n" + text)
        internals = as_json(out["pybind-internals --types --json"])
        _, cli_internals, _ = scenario.run_pytstates(args.pytstates, ["internals", "--core", core, "--json", "--types"])
        expect(internals["internals"] == cli_internals["internals"], "pybind-internals --types")
    finally:
        scenario.cleanup(core)


def first_repro_crash(args):
    """The seed's first reproduction, the kernel's core, in lldb: the crash section and the two
    errors it is explained by."""
    exe = os.path.join(args.scenarios, "scenario_first_repro_host")
    facts, core = scenario.take_core([exe, "crash"], "crash")
    try:
        _, lines = lldb(args.plugin, ["--core", core, exe], ["thread list", "py-tstates-check --json", "py-tstates-check"])
        out = sections(lines)
        ours = as_json(out["py-tstates-check --json"])
        findings_cases.check_crash(ours, out["py-tstates-check"], facts["worker_lwp"], 11, "tstate_delete_common",
                                   facts["t0"], {"stale-tstate", "invalid-gil-holder"}, "tstate")
        _, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
        expect(without_debugger(ours) == without_debugger(cli), "lldb and the CLI report the same facts", ours)
    finally:
        scenario.cleanup(core)


def live(args):
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    with scenario.running([exe, "svr2", "pause"]) as (proc, facts):
        _, lines = lldb(args.plugin, ["-p", str(proc.pid)], ["py-tstates-check --json", "thread list"])
        out = sections(lines)
        ours = as_json(out["py-tstates-check --json"])
        expect(ours["target"]["kind"] == "live" and ours["target"]["pid"] == proc.pid, "a live target", ours)
        stale = [(f["lwp"], f["tstate"]) for f in ours["findings"] if f["code"] == "stale-tstate"]
        expect(stale == [(facts["worker_lwp"], facts["deleted_tstate"])], "the stale pointer, live", ours)
        rows = {r["lwp"]: r for r in ours["threads"]}
        expect(rows[facts["worker_lwp"]]["pthread"] == facts["worker_pthread"], "the worker's struct pthread", ours)
        expect({r["lwp"]: r.get("debugger_thread") for r in ours["threads"]} == lldb_thread_indexes(out["thread list"]),
               "lldb's thread indexes", ours)
        expect(scenario.still_answers(proc), "the process runs on after lldb detached")


def locals_cases(args, kind):
    """py-tstates --locals in lldb on a core of the suite's python3 (objects_program.py) and attached
    to it running: the program's own account of waiter's locals, and (core) the CLI's JSON."""
    python = scenario.PYTHON
    if kind == "core":
        facts, core = scenario.take_core([python, locals_facts.PROGRAM], "gcore")
        try:
            _, lines = lldb(args.plugin, ["--core", core, python], ["py-tstates --locals --json", "py-tstates --locals"])
            out = sections(lines)
            ours = as_json(out["py-tstates --locals --json"])
            problems = locals_facts.json_problems(ours, facts) + locals_facts.text_problems(out["py-tstates --locals"], facts)
            _, cli, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--json", "--locals"])
            expect(locals_facts.all_frames(ours) == locals_facts.all_frames(cli), "lldb and the CLI report the same frames and locals", ours)
            # lldb hands over no mappings: the non-PIE program's build-id is read where its file
            # puts the ELF header, and verified, as the CLI does from the core's NT_FILE.
            files = {f["module"]: f["build_id"] for f in ours["target"]["files"]}
            expect(files.get(python) and files[python] == {f["module"]: f["build_id"] for f in cli["target"]["files"]}.get(python)
                   and not [w for w in ours.get("warnings", []) if "cannot be verified" in w],
                   "lldb verifies %s's build-id as the CLI does: %s; warnings %s" % (python, files.get(python), ours.get("warnings")))
        finally:
            scenario.cleanup(core)
    else:
        with scenario.running([python, locals_facts.PROGRAM]) as (proc, facts):
            _, lines = lldb(args.plugin, ["-p", str(proc.pid)], ["py-tstates --locals --json"])
            ours = as_json(sections(lines)["py-tstates --locals --json"])
            problems = locals_facts.json_problems(ours, facts)
            expect(proc.poll() is None, "the program runs on after lldb detached")
    expect(not problems, "py-tstates --locals (%s): %s" % (kind, "; ".join(problems)))


def terminal_width(args):
    """The text as wide as lldb's terminal (its term-width, which lldb's driver sets from the
    terminal's size), as the CLI's is: on a 72-column terminal every line of py-tstates fits and a
    deep file's path is cut at the front; lldb -b into a pipe (term-width 80, lldb's default, no
    terminal's) and a typed --width 0 leave it whole."""
    with long_paths.deep_program() as (proc, facts):
        pid = str(proc.pid)
        _, lines = lldb(args.plugin, ["-p", pid], ["py-tstates"])
        piped = sections(lines)
        text = long_paths.on_terminal([scenario.LLDB, "-b", "-o", "plugin load " + args.plugin, "-o", "py-tstates --width 0",
                                       "-o", "py-tstates", "-p", pid], 72)
        on_tty = sections(text.splitlines())
        expect(proc.poll() is None, "the program runs on after lldb detached")
    expect("py-tstates" in piped and "py-tstates" in on_tty and "py-tstates --width 0" in on_tty, "lldb ran py-tstates:\n" + text)
    print("lldb -b | cat: " + long_paths.check_frame(piped["py-tstates"], facts, None, "lldb -b into a pipe").strip())
    print("lldb on 72 columns: " + long_paths.check_frame(on_tty["py-tstates"], facts, 72, "lldb on a 72-column terminal").strip())
    long_paths.check_frame(on_tty["py-tstates --width 0"], facts, None, "lldb on a terminal, --width 0 typed")


def errors(args):
    code, lines = lldb(args.plugin, [], ["help py-tstates", "py-tstates"])
    out = sections(lines)
    expect("PYTHREADSTATE" in out["help py-tstates"], "help py-tstates explains the columns")
    expect("no process or core" in out["py-tstates"], "no target: one line\n" + out["py-tstates"])
    code, lines = lldb(args.plugin, [], ["py-tstates --frames x"])
    expect("--frames needs a number" in "\n".join(lines), "a bad option value\n" + "\n".join(lines))
    facts, core = scenario.take_core(["/bin/sh", "-c", 'echo "FACTS {}"; echo READY; exec sleep 100'], "gcore")
    try:
        code, lines = lldb(args.plugin, ["--core", core, "/bin/sleep"], ["py-tstates"])
        text = "\n".join(lines)
        expect("no initialised CPython runtime" in text and "Segmentation" not in text, "a non-Python core\n" + text)
    finally:
        scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--plugin", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("case", choices=["seed-core", "seed-crash-core", "first-repro-crash-core", "live", "errors", "locals-core", "locals-live",
                                    "terminal-width"])
    args = p.parse_args()
    if args.case == "seed-core":
        seed_core(args, "gcore")
    elif args.case == "seed-crash-core":
        seed_core(args, "crash")
    elif args.case == "first-repro-crash-core":
        first_repro_crash(args)
    elif args.case == "live":
        live(args)
    elif args.case in ("locals-core", "locals-live"):
        locals_cases(args, args.case.split("-")[1])
    elif args.case == "terminal-width":
        terminal_width(args)
    else:
        errors(args)
    print("PASS lldb " + args.case)


if __name__ == "__main__":
    main()
