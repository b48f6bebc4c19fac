#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The hang and abort analyses inside real gdb and lldb-14: a deadlocked service's core (the HANG
section, the same JSON as the CLI's) and, in gdb, one whose GIL holder sits in syscall(SYS_read)
(the call from the orig_rax gdb hands over), and live processes the debugger holds stopped on their
fatal signal (the CRASH section as for a core: SIGSEGV of the seed's first reproduction with its
findings, SIGABRT of an uncaught exception with its type and message)."""
import argparse
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import debugger_batch  # noqa: E402
import scenario  # noqa: E402
from debugger_batch import as_json, between, json_after, marked  # noqa: E402


def expect(cond, what, report=None):
    if not cond:
        raise AssertionError(what + ("" if report is None else "\n" + json.dumps(report, indent=1)[:4000]))


def gdb(args, target_args, commands):
    return debugger_batch.gdb(args.gdb_script, target_args, commands, timeout=180, pagination=False)[1]


def lldb(args, target_args, commands, batch=True):
    return "\n".join(debugger_batch.lldb(args.plugin, target_args, commands, batch=batch, timeout=180)[1])


def facts_of(text):
    m = re.search(r"^FACTS (\{.*\})$", text, re.M)
    expect(m is not None, "the program printed no FACTS:\n" + text[-3000:])
    return json.loads(m.group(1))


def comparable(report):
    for row in report["threads"]:
        row.pop("debugger_thread", None)
    report["target"].pop("stopped_ms", None)
    report["target"].pop("read_after_resume", None)  # a live stop's own account
    report.pop("warnings", None)
    if report["target"].get("crash"):
        for key in ("code", "code_name", "fault_address", "sender_pid"):
            report["target"]["crash"].pop(key, None)
    return report


def check_cycle(report, facts):
    dl = [f for f in report["findings"] if f["code"] == "deadlock"]
    expect(len(dl) == 1, "one deadlock", report)
    got = {(s["lwp"], s["waits_for"], s["held_by"]) for s in dl[0]["cycle"]}
    g, o = facts["holder_of_gil"], facts["holder_of_mutex"]
    expect(got == {(g, "mutex", o), (o, "gil", g)}, "the GIL-mutex cycle: %s" % got, report)


def check_syscall(report, facts):
    """syscall(SYS_read) with the GIL held: the call told by the number in the registers the
    debugger handed over (orig_rax)."""
    rows = {t["lwp"]: t for t in report["threads"]}
    b = rows[facts["holder"]].get("blocked_on") or {}
    expect(b.get("kind") == "syscall" and b.get("call") == "read" and b.get("function") == "syscall",
           "the holder is blocked in read() through syscall()", report)
    expect([f["code"] for f in report["findings"] if f["code"] in ("deadlock", "gil-held-while-blocked")] == ["gil-held-while-blocked"],
           "gil-held-while-blocked", report)


def hang_core(args, debugger):
    cases = [("gil-mutex", check_cycle, "HANG  deadlock: 2 threads wait for each other")]
    # lldb (14 and 19) has no orig_rax register, on a core or live: there the call is told by its
    # wrapper's name only.
    if debugger == "gdb":
        cases.append(("syscall", check_syscall, "HANG  the GIL's holder is blocked"))
    for case, check, section in cases:
        one_hang_core(args, debugger, case, check, section)


def one_hang_core(args, debugger, case, check, section):
    exe = os.path.join(args.scenarios, "scenario_hang_host")
    facts, core = scenario.take_core([exe, case], "gcore", after_ready=lambda p, f: time.sleep(1.0))
    try:
        _, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
        if debugger == "gdb":
            out = gdb(args, [exe, core], marked("json", "py-tstates-check --json") + marked("text", "py-tstates-check"))
            ours, text = as_json(between(out, "json")), between(out, "text")
        else:
            out = lldb(args, [exe, "-c", core], ["py-tstates-check --json", "py-tstates-check"])
            ours = json_after(out, "(lldb) py-tstates-check --json")
            text = out[out.index("(lldb) py-tstates-check\n"):]
        check(ours, facts)
        expect(comparable(ours)["findings"] == comparable(cli)["findings"], "%s and the CLI find the same" % debugger, ours)
        expect([t.get("blocked_on") for t in ours["threads"]] == [t.get("blocked_on") for t in cli["threads"]],
               "%s and the CLI: the same blocked_on" % debugger, ours)
        expect(section in text, "the HANG section in %s:\n%s" % (debugger, text[:3000]))
    finally:
        scenario.cleanup(core)


def live_signal(args, debugger):
    """Started by the debugger and run to its fatal signal: crash is filled as for a core."""
    cases = [(os.path.join(args.findings_scenarios, "scenario_first_repro_host"), ["crash"], 11),
             (os.path.join(args.scenarios, "scenario_hang_host"), ["throw"], 6)]
    for exe, argv, signo in cases:
        if debugger == "gdb":
            out = gdb(args, ["--args", exe] + argv, ["run"] + marked("json", "py-tstates-check --json") +
                      marked("text", "py-tstates-check") + ["kill"])
            ours, text = as_json(between(out, "json")), between(out, "text")
        else:
            out = lldb(args, ["--", exe] + argv, ["process launch", "py-tstates-check --json", "py-tstates-check", "process kill", "quit"],
                       batch=False)
            ours = json_after(out, "(lldb) py-tstates-check --json")
            text = out[out.index("(lldb) py-tstates-check\n"):]
        facts = facts_of(out)
        crash = ours["target"]["crash"]
        expect(ours["target"]["kind"] == "live" and crash is not None, "%s: a live process stopped on signal %d has a crash" % (debugger, signo), ours)
        expect(crash["signal"] == signo, "the signal %d" % signo, ours)
        expect("CRASH  " in text, "the CRASH section in %s:\n%s" % (debugger, text[:2000]))
        if signo == 11:
            expect(crash["lwp"] == facts["worker_lwp"], "the worker crashed", ours)
            codes = {ours["findings"][i]["code"] for i in crash["explained_by"]}
            expect("stale-tstate" in codes, "the crash is the stale-tstate finding", ours)
        else:
            expect(crash["lwp"] == facts["worker"], "the worker aborted", ours)
            expect(crash["abort"] == {"kind": "uncaught-exception", "type": facts["type"], "message": facts["message"]},
                   "the uncaught exception", ours)


def live_syscall(args, debugger):
    """Attached to a live process whose GIL holder sits in syscall(SYS_read): the call from gdb's
    orig_rax, and for lldb (no such register) from /proc/PID/task/TID/syscall."""
    exe = os.path.join(args.scenarios, "scenario_hang_host")
    with scenario.running([exe, "syscall"]) as (proc, facts):
        time.sleep(1.5)
        _, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(proc.pid), "--json"])
        if debugger == "gdb":
            out = gdb(args, ["-p", str(proc.pid)], marked("json", "py-tstates-check --json") + ["detach"])
            ours = as_json(between(out, "json"))
        else:
            out = lldb(args, ["-p", str(proc.pid)], ["py-tstates-check --json", "detach"])
            ours = json_after(out, "(lldb) py-tstates-check --json")
        check_syscall(cli, facts)
        check_syscall(ours, facts)
        expect(ours["target"]["kind"] == "live", "a live target", ours)
        expect(proc.poll() is None, "the process lives on after %s detached" % debugger)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script", required=True)
    p.add_argument("--plugin", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("--findings-scenarios", required=True)
    p.add_argument("case", choices=["gdb-hang-core", "gdb-live-signal", "gdb-live-syscall", "lldb-hang-core", "lldb-live-signal",
                                    "lldb-live-syscall"])
    args = p.parse_args()
    debugger, what = args.case.split("-", 1)
    {"hang-core": hang_core, "live-signal": live_signal, "live-syscall": live_syscall}[what](args, debugger)
    print("PASS " + args.case)


if __name__ == "__main__":
    main()
