#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The gdb front end on arm64, under gdb-multiarch on this x86_64 machine (tests/lib/arm64.py):

  core      the threads scenario's qemu core: `py-tstates-check --json --native` in gdb-multiarch
            (sysroot the arm64 root) gives the CLI's thread states, LWPs, pthreads, PyGILState slots,
            waits, findings and every native frame (function, pc, line) on the same core
            (`pytstates check --native --core C --sysroot ROOT`). Not compared: the crash, which
            the CLI has from pr_cursig and gdb gives no script ($_siginfo needs NT_SIGINFO, which
            qemu does not write), and with it the crashed thread's frame parameters;
            the registers are read by aarch64's names (x0-x30 sp pc) and, once the core carries
            NT_ARM_TLS as real kernels write it, the thread pointer as gdb names it ($tpidr) gives
            each thread's struct pthread.
  gdbstub   threads.py stub (the threads scenario) live under qemu-aarch64-static -g PORT (qemu's
            gdb stub), gdb-multiarch `target remote :PORT`, stopped at the getppid() it calls once its
            threads wait (qemu's user-mode stub does not answer an interrupt while every thread is in
            a system call): the front end gives every thread state with the LWP, pthread and
            function the program said it had. gdb lists qemu's guest threads as "Thread 1.LWP"
            (process 1, the LWPs the guest's gettid() gives), with no $tpidr (qemu 7.2's stub sends
            no TLS register): struct pthread comes from glibc's thread lists.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, HERE)
import arm64  # noqa: E402
import scenario  # noqa: E402
from arm64_test import THREADS, add_notes, check_threads_facts  # noqa: E402

from findings_cases import expect  # noqa: E402


def gdb_argv(tree, script):
    """gdb-multiarch in batch mode with the arm64 root as sysroot and the front end sourced."""
    gdb = shutil.which("gdb-multiarch")
    expect(gdb is not None, "gdb-multiarch is not installed (Debian package gdb-multiarch)")
    return [gdb, "-nx", "-batch", "-iex", "set sysroot " + tree,
            "-iex", "set debug-file-directory " + os.path.join(tree, "usr", "lib", "debug"),
            "-iex", "set pagination off", "-iex", "set width 0", "-iex", "set confirm off",
            "-ex", "source " + script]


def report_of(out, what):
    """The JSON object py-tstates-check --json printed (from its first line starting with '{')."""
    m = re.search(r"^\{.*?^\}$", out, re.M | re.S)
    expect(m is not None, "%s printed no JSON report:\n%s" % (what, out[-3000:]))
    return json.loads(m.group(0))


def front_end_on_core(args, tree, core, extra=()):
    argv = gdb_argv(tree, args.gdb_script) + list(extra) + ["-ex", "py-tstates-check --json --native", arm64.python(tree), core]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300).stdout.decode(errors="replace")
    return report_of(out, "gdb-multiarch's py-tstates-check"), out


def view(report):
    """What the CLI and the front end must agree on."""
    tstates = {t["address"]: (t["lwp"], t["thread_id"], [(f["function"], f.get("line")) for f in t["frames"]])
               for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"]}
    threads = {}
    for r in report["threads"]:
        waits = r.get("blocked_on") or {}
        threads[r["lwp"]] = {"pthread": r["pthread"], "autotss": (r.get("autotss_key"), r.get("autotss_tstate")),
                             "current_tstate": r.get("current_tstate"), "tstates": r.get("tstates"),
                             "blocked_on": (waits.get("kind"), waits.get("function"), waits.get("call"), waits.get("object")),
                             "native": [(f.get("function"), f.get("pc"), f.get("line"), f.get("inlined")) for f in r.get("native_frames") or []]}
    found = sorted((f["code"], f["severity"], f.get("lwp"), f.get("tstate")) for f in report["findings"])
    return tstates, threads, found


def compare(cli, gdb):
    c_tstates, c_threads, c_findings = view(cli)
    g_tstates, g_threads, g_findings = view(gdb)
    expect(g_tstates == c_tstates, "the CLI's thread states, LWPs, pthreads and Python frames: %s" % c_tstates, gdb)
    expect(sorted(g_threads) == sorted(c_threads), "the CLI's LWPs %s" % sorted(c_threads), gdb)
    for lwp, mine in c_threads.items():
        for field, value in mine.items():
            expect(g_threads[lwp][field] == value, "LWP %d: %s %s as the CLI has it, not %s" % (lwp, field, value, g_threads[lwp][field]), gdb)
        expect(len(mine["native"]) > 5, "LWP %d has its native stack" % lwp, cli)
    expect(g_findings == c_findings, "the CLI's findings %s" % c_findings, gdb)
    return c_tstates, c_threads, c_findings


def core_case(args, tree):
    workdir = tempfile.mkdtemp(prefix="pytstates-arm64-fe-")
    try:
        facts, core = arm64.take_core([arm64.python(tree), THREADS], workdir=workdir)
        status, cli, err = scenario.run_pytstates(args.pytstates, ["check", "--json", "--native", "--core", core, "--sysroot", tree])
        expect(status in (0, 1), "pytstates exited %d: %s" % (status, err))
        check_threads_facts(facts, cli)
        gdb, out = front_end_on_core(args, tree, core)
        expect(gdb["target"]["arch"] == "aarch64", "gdb-multiarch's target is aarch64", gdb)
        tstates, threads, found = compare(cli, gdb)
        print("qemu core: gdb-multiarch's py-tstates-check and the CLI agree on %d thread states, LWPs %s, %d findings, %d native frames"
              % (len(tstates), sorted(threads), len(found), sum(len(t["native"]) for t in threads.values())))

        # NT_ARM_TLS, as real kernels write it: gdb then has $tpidr, which the front end reads by the
        # name the core gives it; one thread's moved by a page moves that thread's pthread.
        size = int(re.search(r"\$1 = (\d+)", arm64.gdb_multiarch(tree, arm64.python(tree), core, ["p sizeof(struct pthread)"])).group(1))
        tls = {t["lwp"]: int(t["pthread"], 16) + size for t in facts["threads"]}
        main = facts["threads"][-1]
        tls[main["lwp"]] += 4096
        add_notes(core, tls, [])
        probe = ("python import pytstates.gdb as g; n = g._Names(g._machine()); "
                 "print('NAMES', n.machine, n.thread_pointer, ' '.join(n.dwarf), hex(g._thread_pointer(n)), len(g._registers(n)))")
        gdb, out = front_end_on_core(args, tree, core, ["-ex", probe])
        m = re.search(r"^NAMES (\S+) (\S+) (.*) (0x[0-9a-f]+) (\d+)$", out, re.M)
        expect(m is not None, "the front end's names:\n" + out[-3000:])
        names = ["x%d" % i for i in range(31)] + ["sp", "pc"]
        expect(m.group(1) == "aarch64" and m.group(2) == "tpidr" and m.group(3).split() == names and m.group(5) == str(len(names)),
               "aarch64: $tpidr and x0-x30 sp pc, 33 registers read: %s" % m.group(0))
        expect(int(m.group(4), 16) == tls[main["lwp"]], "thread 1's $tpidr %s is NT_ARM_TLS's %s" % (m.group(4), hex(tls[main["lwp"]])))
        row = [r for r in gdb["threads"] if r["lwp"] == main["lwp"]][0]
        expect(row["pthread"] == hex(int(main["pthread"], 16) + 4096), "the main thread's pthread follows $tpidr", gdb)
        others = {r["lwp"]: r["pthread"] for r in gdb["threads"] if r["lwp"] != main["lwp"]}
        expect(others == {t["lwp"]: t["pthread"] for t in facts["threads"] if t["lwp"] != main["lwp"]}, "the other threads' pthreads", gdb)
        print("with NT_ARM_TLS: $tpidr %s read by name, struct pthread = tpidr - %d on every thread" % (m.group(4), size))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gdbstub_case(args, tree):
    _, qemu = arm64.root()
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="pytstates-arm64-stub-")
    guest = subprocess.Popen([qemu, "-g", str(port), "-L", tree, arm64.python(tree), THREADS, "stub"], cwd=workdir, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=arm64.guest_env())
    gdb = None
    try:
        time.sleep(0.5)  # qemu listens before the guest's first instruction
        argv = gdb_argv(tree, args.gdb_script) + [
            "-ex", "target remote 127.0.0.1:%d" % port, "-ex", "set breakpoint pending on", "-ex", "break getppid", "-ex", "continue",
            "-ex", "info threads", "-ex", "python import pytstates.gdb as g; n = g._Names(g._machine()); "
                                          "print('TP', n.thread_pointer, hex(g._thread_pointer(n)))",
            "-ex", "py-tstates-check --json", "-ex", "kill", arm64.python(tree)]
        gdb = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        facts = scenario.read_facts(guest, time.monotonic() + 120, AssertionError, "the guest")
        out, _ = gdb.communicate(timeout=300)
        out = out.decode(errors="replace")
        report = report_of(out, "py-tstates-check through qemu's gdb stub")
        expect(report["target"]["arch"] == "aarch64" and report["target"]["kind"] == "live", "a live aarch64 target", report)
        check_threads_facts(facts, report)
        tstates = [t for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"]]
        expect(len(tstates) == len(facts["threads"]), "%d thread states" % len(facts["threads"]), report)
        expect(re.search(r"hit Breakpoint 1, .*getppid", out) is not None, "stopped at getppid:\n" + out[-3000:])
        gdb_threads = re.findall(r"^\*?\s+\d+\s+(Thread \S+ \(LWP \d+\)|Thread [\w.]+)", out, re.M)
        tp = re.search(r"^TP (\S+) (0x[0-9a-f]+)$", out, re.M)
        print("qemu's gdb stub: gdb lists %s; $%s of the selected thread: %s; the front end: %d thread states, LWPs %s, %d findings" % (
            gdb_threads, tp.group(1) if tp else "?", tp.group(2) if tp else "?", len(tstates),
            sorted(r["lwp"] for r in report["threads"]), len(report["findings"])))
    finally:
        for p in (gdb, guest):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script", required=True, help="build/plugin/gdb/pytstates.gdb")
    p.add_argument("case", choices=["core", "gdbstub"])
    args = p.parse_args()
    try:
        tree, _ = arm64.root()
    except arm64.Arm64Error as e:
        print("FAIL: the arm64 tree cannot be had: %s" % e)
        return 1
    if args.case == "core":
        core_case(args, tree)
    else:
        gdbstub_case(args, tree)
    print("PASS arm64 front end %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
