#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Python's own state, from real programs: thread names (threads[].name), the interpreter's state
(running or finalizing and on which thread; the GC collecting and on which thread) and a GIL wait
while the runtime finalizes, on cores (gcore, the kernel's) and live processes, in the CLI, gdb
and lldb. Truth from the programs (names, threading.get_native_id(), gettid()) and from gdb on the
same core (its thread list: pthread -> LWP; DWARF expressions: _PyRuntime's finalizing field, the
interpreter's gc.collecting)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import debugger_batch  # noqa: E402
import pyenv  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402


def python_for(version):
    """The suite's own Python, pyenv's X.Y, or scripts/python-freethreaded's 3.13t."""
    if version in (None, scenario.PYTHON_VERSION):
        return scenario.PYTHON
    if version.endswith("t"):
        out = subprocess.run([os.path.join(HERE, "..", "..", "scripts", "python-freethreaded"), version[:-1]],
                             stdout=subprocess.PIPE, text=True)
        expect(out.returncode == 0, "no free-threaded CPython " + version)
        return os.path.join(out.stdout.strip(), "bin", "python" + version)
    return pyenv.require(version)[1]


def build_host(version, workdir):
    """tests/state/exit_hang_host.c embedding CPython `version` (its python-config), in workdir."""
    python = python_for(version)
    config = python + "-config"
    expect(os.path.exists(config), "%s is missing (the CPython's development files)" % config)
    flags = subprocess.run([config, "--cflags", "--ldflags", "--embed"], stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    libdir = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
                            stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    exe = os.path.join(workdir, "exit_hang_host")
    subprocess.run(["cc", "-g", "-O1", "-o", exe, os.path.join(HERE, "exit_hang_host.c")] + flags +
                   ["-lpthread", "-Wl,-rpath," + libdir], check=True)
    return exe


def gdb_threads(program, core):
    """gdb's thread list of the core: {pthread (int): LWP}."""
    out = subprocess.run(["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off", "-ex", "info threads", program, core],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300).stdout.decode(errors="replace")
    found = {int(m.group(1), 16): int(m.group(2)) for m in re.finditer(r"Thread (0x[0-9a-f]+) \(LWP (\d+)\)", out)}
    expect(found, "gdb names no thread of %s:\n%s" % (core, out[-2000:]))
    return found


def gdb_values(program, core, exprs):
    """Each C expression's value as gdb evaluates it on the core (DWARF), an int or None."""
    argv = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    for e in exprs:
        argv += ["-ex", "printf \"VALUE %%ld\\n\", (long)(%s)" % e]
    out = subprocess.run(argv + [program, core], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=300).stdout.decode(errors="replace")
    values = [int(v) for v in re.findall(r"^VALUE (-?\d+)$", out, re.M)]
    expect(len(values) == len(exprs), "gdb evaluated %s:\n%s" % (exprs, out[-2000:]))
    return values


def rows_of(report):
    return {t["lwp"]: t for t in report["threads"]}


def main_interp(report):
    interps = [i for rt in report["runtimes"] for i in rt["interpreters"] if i["main"]]
    expect(len(interps) == 1, "one main interpreter", report)
    return interps[0]


# ---------------------------------------------------------------- names

def check_names(report, text, facts, kind):
    rows = rows_of(report)
    want = {t["native_id"]: t["name"] for t in facts["threads"]}
    want[facts["main"]["native_id"]] = facts["main"]["name"]
    for lwp, name in want.items():
        row = rows.get(lwp)
        expect(row is not None, "LWP %d is listed" % lwp, report)
        expect(row.get("name") == name and row.get("name_source") == "threading",
               "LWP %d is named %r by threading (got %r)" % (lwp, name, row.get("name")), report)
    raw = rows.get(facts["raw"]["native_id"])
    expect(raw is not None, "the _thread thread is listed", report)
    if kind == "live":
        expect(raw.get("name") == facts["raw"]["comm"] and raw.get("name_source") == "kernel",
               "the _thread thread has its kernel name %r" % facts["raw"]["comm"], report)
    else:
        expect(raw.get("name") is None, "a core keeps no name of a thread but the main one's", report)
    # Text: the row's name, the control character escaped (a terminal shows it, never obeys it).
    expect('name "bell\\x07ctl"' in text and "\x07" not in text, "the control character is shown as \\x07:\n" + text)
    expect('name "worker-\u00e9\u4e16"' in text, "the non-ASCII name as is:\n" + text)
    expect(re.search(r'^    tstate 0x[0-9a-f]+ .*"plain"$', text, re.M), "the thread state's line names its thread:\n" + text)
    print("names (%s): %s" % (kind, ", ".join("LWP %d %s" % (lwp, json.dumps(rows[lwp].get("name"))) for lwp in sorted(rows))))


def names_case(args):
    argv = [python_for(args.python), os.path.join(HERE, "named_threads.py")]
    if args.kind == "live":
        with scenario.running(argv) as (proc, facts):
            _, report, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", str(proc.pid), "--json"], 0)
            _, text, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", str(proc.pid)], 0)
            check_names(report, text, facts, "live")
            expect(scenario.still_answers(proc), "the program runs on after the reads")
        return
    facts, core = scenario.take_core(argv, args.kind)
    try:
        quiet = scenario.quiet_status(args.kind)  # a kernel core's SIGABRT: a CRASH, exit status 1
        _, report, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--json"], quiet)
        _, text, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core], quiet)
        check_names(report, text, facts, args.kind)
        # gdb: which LWP runs each ident (pthread_self) the program printed.
        by_pthread = gdb_threads(argv[0], core)
        rows = rows_of(report)
        for t in facts["threads"] + [facts["main"]]:
            lwp = by_pthread.get(t["ident"])
            expect(lwp == t["native_id"], "gdb: pthread %#x is LWP %d" % (t["ident"], t["native_id"]))
            expect(rows[lwp]["name"] == t["name"], "gdb's LWP %d for %r" % (lwp, t["name"]), report)
        print("gdb: %d threads by pthread agree" % len(by_pthread))
    finally:
        scenario.cleanup(core)


def main_elsewhere_case(args):
    """A "MainThread" on a thread that is not the process's first says so, where the program's
    own threading says its main thread is that worker (up to 3.12); nowhere else."""
    argv = [python_for(args.python), os.path.join(HERE, "main_elsewhere.py")]
    note = "(threading's main thread, though not the process's first thread: threading was first imported on it)"

    def check(report, text, facts):
        rows = rows_of(report)
        worker = rows.get(facts["worker_lwp"])
        expect(worker is not None and facts["worker_lwp"] != facts["pid"], "the worker LWP %d is listed" % facts["worker_lwp"], report)
        lines = [l for l in text.splitlines() if re.match(r"^\s+(\d+\s+)?%d\s" % facts["worker_lwp"], l)]
        expect(len(lines) == 1, "the worker's row in the thread table:\n" + text)
        if facts["main_ident_is_worker"]:
            expect(worker.get("name") == facts["worker_name"] == "MainThread" and worker.get("name_source") == "threading",
                   "threading named the worker MainThread", report)
            expect(lines[0].endswith('name "MainThread" ' + note), "the worker's row says why it is MainThread:\n" + lines[0])
        else:
            expect(note not in text and "not the process's first" not in text,
                   "threading's main thread is the process's first: no note\n" + text)
        first = [l for l in text.splitlines() if re.match(r"^\s+(\d+\s+)?%d\s" % facts["pid"], l)]
        expect(not first or "not the process's first" not in first[0], "the first thread has no note:\n" + "\n".join(first))
        print("main-elsewhere (%s): %s" % (args.kind, lines[0].strip()[-170:]))

    if args.kind == "live":
        with scenario.running(argv) as (proc, facts):
            _, report, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", str(proc.pid), "--json"], 0)
            _, text, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--width", "0", "--pid", str(proc.pid)], 0)
            check(report, text, facts)
        return
    facts, core = scenario.take_core(argv, args.kind)
    try:
        quiet = scenario.quiet_status(args.kind)
        _, report, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--json"], quiet)
        _, text, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--width", "0", "--core", core], quiet)
        check(report, text, facts)
    finally:
        scenario.cleanup(core)


def one_thread_case(args):
    """A process of one thread and one thread state: every count in the text is singular (the
    header's "1 thread", the interpreter's "1 thread state", the OS THREADS table, the last line)."""
    program = 'import sys; print("FACTS {}", flush=True); print("READY", flush=True); sys.stdin.readline()'
    facts, core = scenario.take_core([python_for(args.python), "-c", program], args.kind)
    try:
        _, report, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core, "--json"], scenario.quiet_status(args.kind))
        expect(len(report["threads"]) == 1, "one thread", report["threads"])
        _, text, _ = scenario.run_pytstates(args.pytstates, ["tstates", "--width", "0", "--core", core], scenario.quiet_status(args.kind))
        head = text.splitlines()[0]
        expect(head.endswith("  1 thread") and "1 thread state\n" in text and "OS THREADS (1)" in text and
               "pytstates: 1 thread, 1 thread state, no crash; exit 0" in text and not re.search(r"\b1 [a-z ]*?s\b(?! state)", head),
               "one of each, said as one:\n" + text)
        plural = re.findall(r"(?<![\w.x-])1 (?:thread|thread state|record|greenlet|task|event loop|module|object|breakpoint)s\b", text)
        expect(not plural, "no count of one in the plural: %s\n%s" % (plural, text))
        print("one thread: %s / %s" % (head, text.strip().splitlines()[-1]))
    finally:
        scenario.cleanup(core)


# ---------------------------------------------------------------- GC

def gc_expr(version):
    return "_PyRuntime.gc.collecting" if version == "3.8" else "_PyRuntime.interpreters.main->gc.collecting"


def check_gc(report, text, facts, named=True):
    """named: the collecting thread is told by its stack; not so where the only symbols are a
    stripped executable's dynamic ones (Debian's python3.11 with --no-dwarf: the collection's
    functions are static)."""
    interp = main_interp(report)
    expect(interp.get("state") == "running", "the interpreter runs", report)
    lwp = facts["collector"] if named else None
    expect(interp.get("gc_collecting") is True and interp.get("gc_lwp") == lwp, "the GC collects on LWP %s" % lwp, report)
    expect(interp.get("finalizing_lwp") is None, "no thread finalizes", report)
    words = "on LWP %d" % facts["collector"] if named else "(no thread's stack shows the collection)"
    expect("state: running  GC: collecting " + words in text, "the state line:\n" + text)
    expect(rows_of(report)[facts["holder"]].get("name") == "holder", "the holder's name", report)
    print("gc: state %s, gc_collecting %s on LWP %s (the program: LWP %d)" %
          (interp["state"], interp["gc_collecting"], interp["gc_lwp"], facts["collector"]))


def gc_case(args):
    argv = [python_for(args.python), os.path.join(HERE, "gc_del.py")]
    settle = lambda proc, facts: time.sleep(1.0)  # READY comes just before gc.collect()
    if args.kind == "live":
        with scenario.running(argv) as (proc, facts):
            time.sleep(1.0)
            _, report, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(proc.pid), "--json"])
            _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(proc.pid)])
            check_gc(report, text, facts)
        return
    facts, core = scenario.take_core(argv, args.kind, after_ready=settle)
    try:
        extra = ["--no-dwarf"] if args.no_dwarf else []
        _, report, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"] + extra)
        _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core] + extra)
        check_gc(report, text, facts, named=not (args.no_dwarf and argv[0] == scenario.PYTHON))
        if args.no_dwarf:  # the offsets from the table measured on this version's build
            layout = main_interp(report)["state_layout"]
            expect(layout.startswith("table (CPython " + facts["version"]), "the table's offsets: %s" % layout, report)
            print("--no-dwarf: " + layout)
        collecting, = gdb_values(argv[0], core, [gc_expr(facts["version"])])
        expect(collecting == 1, "gdb: %s is %d" % (gc_expr(facts["version"]), collecting))
        print("gdb: %s = %d" % (gc_expr(facts["version"]), collecting))
    finally:
        scenario.cleanup(core)


# ---------------------------------------------------------------- a hang at exit

def finalizing_expr(version):
    if version == "3.8":
        return "_PyRuntime.finalizing"
    if version in ("3.9", "3.10", "3.11", "3.12"):
        return "_PyRuntime._finalizing._value"
    return "_PyRuntime._finalizing"


def check_exit_hang(report, text, facts, exe):
    interp = main_interp(report)
    main, worker = facts["main"], facts["worker"]
    expect(interp.get("state") == "finalizing" and interp.get("finalizing_lwp") == main,
           "the runtime finalizes on LWP %d" % main, report)
    rows = rows_of(report)
    b = rows[worker].get("blocked_on") or {}
    expect(b.get("kind") == "gil" and b.get("held_by") == main and b.get("runtime_finalizing") is True,
           "LWP %d waits for the GIL held by LWP %d while the runtime finalizes" % (worker, main), report)
    expect((rows[main].get("blocked_on") or {}).get("kind") == "join", "LWP %d joins the worker" % main, report)
    dl = [f for f in report["findings"] if f["code"] == "deadlock"]
    expect(len(dl) == 1 and {s["lwp"] for s in dl[0]["cycle"]} == {main, worker}, "one deadlock of both threads", report)
    expect("a thread that waits for the GIL now will never get it back" in dl[0]["message"], "the finalizing words", report)
    # No threading.Thread, and a core keeps no thread's kernel name (its NT_PRPSINFO's pr_fname is
    # the main thread's comm, which gdb and lldb cannot hand over: not used, so all front ends agree).
    expect(rows[main].get("name") is None and rows[worker].get("name") is None, "no names in a C host's core", report)
    expect("its runtime is finalizing: it will never get the GIL back" in text, "the wait line:\n" + text)
    expect("state: finalizing (the runtime: Py_FinalizeEx on LWP %d" % main in text, "the state line:\n" + text)
    print("exit hang: state %s on LWP %s; LWP %d: %s" % (interp["state"], interp["finalizing_lwp"], worker, json.dumps(b)[:300]))
    print("deadlock: " + dl[0]["message"])


def exit_case(args):
    workdir = tempfile.mkdtemp(prefix="pytstates-state-")
    try:
        exe = build_host(args.python, workdir)
        if args.case == "exit-ends":
            # 3.9-3.13 end a thread that waits in take_gil while the runtime finalizes
            # (PyThread_exit_thread): the same host exits.
            started = time.monotonic()
            out = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            expect(out.returncode == 0, "the host exited %d:\n%s" % (out.returncode, out.stdout.decode(errors="replace")))
            print("CPython %s ends the waiting thread: the host exits 0 in %.1f s" % (args.python or scenario.PYTHON_VERSION,
                                                                                     time.monotonic() - started))
            return
        facts, core = scenario.take_core([exe], args.kind, workdir=workdir, after_ready=lambda p, f: time.sleep(1.0))
        status, report, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
        expect(status == 1, "check exits 1 (a deadlock)", report)
        _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core])
        check_exit_hang(report, text, facts, exe)
        expr = finalizing_expr(facts["version"])
        finalizing, = gdb_values(exe, core, [expr])
        interp = main_interp(report)
        tstates = {int(t["address"], 16): t for t in interp["tstates"]}
        expect(finalizing in tstates and tstates[finalizing]["lwp"] == facts["main"],
               "gdb: %s = %#x, the main thread's state" % (expr, finalizing), report)
        print("gdb: %s = %#x (LWP %d's thread state)" % (expr, finalizing, facts["main"]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def exit_sid_case(args):
    """The host on Debian unstable's 3.14 (scripts/debian-python's root): it hangs for good
    (take_gil hangs the waiter, PyThread_hang_thread); the runtime finalizes on the main thread,
    which joins the worker. The worker sits in pause() with a stack gdb does not unwind either."""
    root = os.path.join(os.path.abspath(args.sid_dir), "root")
    expect(os.path.isdir(os.path.join(root, "usr", "include", "python3.14")), "no 3.14 root with headers in " + args.sid_dir)
    workdir = tempfile.mkdtemp(prefix="pyts", dir="/tmp")  # the loader's link must be a short path
    try:
        loader = os.path.join(workdir, "ld")
        os.symlink(os.path.join(root, "lib64", "ld-linux-x86-64.so.2"), loader)
        exe = os.path.join(workdir, "exit_hang_host")
        libs = [os.path.join(root, "lib", "x86_64-linux-gnu"), os.path.join(root, "usr", "lib", "x86_64-linux-gnu")]
        # The root's own headers after the host's (its glibc headers are newer), its libpython and
        # loader; DT_RPATH (not RUNPATH) so libpython's own libraries come from the root too.
        subprocess.run(["cc", "-g", "-O1", "-o", exe, os.path.join(HERE, "exit_hang_host.c"),
                        "-I" + os.path.join(root, "usr", "include", "python3.14"), "-idirafter", os.path.join(root, "usr", "include"),
                        "-L" + libs[1], "-lpython3.14", "-lpthread", "-Wl,--allow-shlib-undefined", "-Wl,--dynamic-linker=" + loader,
                        "-Wl,--disable-new-dtags", "-Wl,-rpath," + ":".join(libs)], check=True)
        env = dict(os.environ, PYTHONHOME=os.path.join(root, "usr"))
        facts, core = scenario.take_core([exe], "gcore", workdir=workdir, env=env, after_ready=lambda p, f: time.sleep(1.0))
        debug = os.path.join(root, "usr", "lib", "debug")
        _, report, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--debug-dir", debug, "--json"])
        _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--debug-dir", debug])
        interp = main_interp(report)
        expect(interp.get("state") == "finalizing" and interp.get("finalizing_lwp") == facts["main"] and
               interp.get("finalizing_lwp_evidence") == "thread state", "the runtime finalizes on LWP %d" % facts["main"], report)
        expect("state: finalizing (the runtime: Py_FinalizeEx on LWP %d" % facts["main"] in text, "the state line:\n" + text)
        out = subprocess.run(["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off", "-iex", "set debug-file-directory " + debug,
                              "-ex", "printf \"VALUE %ld\\n\", (long)_PyRuntime._finalizing", exe, core],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300).stdout.decode(errors="replace")
        m = re.search(r"^VALUE (-?\d+)$", out, re.M)
        expect(m is not None, "gdb evaluated _PyRuntime._finalizing:\n" + out[-2000:])
        tstates = {int(t["address"], 16): t for t in interp["tstates"]}
        expect(int(m.group(1)) in tstates and tstates[int(m.group(1))]["lwp"] == facts["main"],
               "gdb: _PyRuntime._finalizing = %#x, the main thread's state" % int(m.group(1)), report)
        print("3.14 host: state %s on LWP %d (gdb: _PyRuntime._finalizing = %#x); the worker LWP %d: %s" %
              (interp["state"], facts["main"], int(m.group(1)), facts["worker"],
               json.dumps(rows_of(report)[facts["worker"]].get("blocked_on"))))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------- gdb and lldb

def names(report):
    return {t["lwp"]: (t.get("name"), t.get("name_source")) for t in report["threads"]}


def state(report):
    return [{k: i.get(k) for k in ("state", "finalizing_lwp", "gc_collecting", "gc_lwp")}
            for rt in report["runtimes"] for i in rt["interpreters"]]


def debugger_report(args, program, core):
    """py-tstates-check --json and its text, in gdb or lldb on the core."""
    if args.kind == "gdb":
        _, out = debugger_batch.gdb(args.gdb_script, [program, core],
                                    debugger_batch.marked("json", "py-tstates-check --json") + debugger_batch.marked("text", "py-tstates-check"),
                                    timeout=200, pagination=False)
        return debugger_batch.as_json(debugger_batch.between(out, "json")), debugger_batch.between(out, "text")
    _, lines = debugger_batch.lldb(args.plugin, ["--core", core, program], ["py-tstates-check --json", "py-tstates-check"], timeout=200)
    out = "\n".join(lines) + "\n"
    return debugger_batch.json_after(out, "(lldb) py-tstates-check --json"), out[out.index("(lldb) py-tstates-check\n"):]


def debuggers_case(args):
    """The names and the GC state in gdb's py-tstates and lldb's, on one core: the CLI's fields."""
    argv = [scenario.PYTHON, os.path.join(HERE, "gc_del.py")]
    facts, core = scenario.take_core(argv, "gcore", after_ready=lambda p, f: time.sleep(1.0))
    try:
        _, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"])
        check_gc(cli, scenario.run_pytstates(args.pytstates, ["check", "--core", core])[1], facts)
        ours, text = debugger_report(args, argv[0], core)
        check_gc(ours, text, facts)
        expect(names(ours) == names(cli), "%s and the CLI name the threads alike: %s" % (args.kind, names(ours)), ours)
        expect(state(ours) == state(cli), "%s and the CLI: the same interpreter state" % args.kind, ours)
        print("%s: names %s; state %s" % (args.kind, names(ours), state(ours)))
    finally:
        scenario.cleanup(core)
    # Attached to the live named-threads program: Python's names and the kernel's, the text escaped.
    argv = [scenario.PYTHON, os.path.join(HERE, "named_threads.py")]
    with scenario.running(argv) as (proc, facts):
        if args.kind == "gdb":
            _, out = debugger_batch.gdb(args.gdb_script, ["-p", str(proc.pid)],
                                        debugger_batch.marked("json", "py-tstates --json") + debugger_batch.marked("text", "py-tstates") +
                                        ["detach"], timeout=200, pagination=False)
            ours, text = debugger_batch.as_json(debugger_batch.between(out, "json")), debugger_batch.between(out, "text")
        else:
            _, lines = debugger_batch.lldb(args.plugin, ["-p", str(proc.pid)], ["py-tstates --json", "py-tstates", "process detach"],
                                           timeout=200)
            out = "\n".join(lines) + "\n"
            ours = debugger_batch.json_after(out, "(lldb) py-tstates --json")
            text = out[out.index("(lldb) py-tstates\n"):]
        check_names(ours, text, facts, "live")
        expect(scenario.still_answers(proc), "the program runs on after %s detached" % args.kind)
        print("%s live: names agree with the program's" % args.kind)


def debuggers_exit_hang_case(args):
    """The hang at exit (3.8's host) in gdb's and lldb's py-tstates-check: the finalizing state,
    the GIL wait's words and the deadlock, as the CLI tells them."""
    workdir = tempfile.mkdtemp(prefix="pytstates-state-")
    try:
        exe = build_host("3.8", workdir)
        facts, core = scenario.take_core([exe], "gcore", workdir=workdir, after_ready=lambda p, f: time.sleep(1.0))
        _, cli, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--json"], 1)
        ours, text = debugger_report(args, exe, core)
        check_exit_hang(ours, text, facts, exe)
        expect(state(ours) == state(cli) and ours["findings"] == cli["findings"],
               "%s and the CLI: the same state and findings on the hang at exit" % args.kind, ours)
        print("%s: the hang at exit as the CLI tells it" % args.kind)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--kind", required=True, help="gcore, kernel, live; gdb or lldb for the debuggers case")
    p.add_argument("--python", help="X.Y: pyenv's (the suite's own when omitted), 3.13t: scripts/python-freethreaded's")
    p.add_argument("--gdb-script")
    p.add_argument("--plugin")
    p.add_argument("--no-dwarf", action="store_true", help="gc: pytstates --no-dwarf (the built-in table)")
    p.add_argument("--sid-dir", help="exit-hang-sid: scripts/debian-python 3.14's directory")
    p.add_argument("case", choices=["names", "main-elsewhere", "one-thread", "gc", "exit-hang", "exit-ends", "exit-hang-sid", "debuggers", "debuggers-exit-hang"])
    args = p.parse_args()
    {"names": names_case, "main-elsewhere": main_elsewhere_case, "one-thread": one_thread_case, "gc": gc_case, "exit-hang": exit_case, "exit-ends": exit_case, "exit-hang-sid": exit_sid_case, "debuggers": debuggers_case,
     "debuggers-exit-hang": debuggers_exit_hang_case}[args.case](args)


if __name__ == "__main__":
    main()
