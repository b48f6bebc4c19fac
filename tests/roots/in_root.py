#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The smoke test's inside: run by tests/roots/smoke in a Debian root (scripts/debian-root run),
with the root's own python3 (3.9 in bullseye to 3.14 in forky: nothing newer than 3.9 here), on
the pytstates tree unpacked in /opt/pytstates.

A small threaded program of the root's python3 prints what each of its threads is (LWP, function);
pytstates must say the same on the live process and on its gcore'd core, through the CLI, gdb's
front end and (where lldb-19 is) lldb's Python front end. Two oracles: what the program printed,
and the debugger's own thread list (gdb's `info threads`, lldb's `thread list`).

Exit status: 0 every step ran and held; 1 a step failed; 77 nothing failed but a step could not
run, which is allowed only for the build tree stand-in (--tree build: its binaries need the build
machine's glibc, and the front ends' files may not be installed yet); with the portable archive
(--tree archive) a step that cannot run is a failure."""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

PREFIX = "/opt/pytstates"
CLI = PREFIX + "/bin/pytstates"
GDB_FE = PREFIX + "/share/pytstates/gdb/pytstates.py"
LLDB_FE = PREFIX + "/share/pytstates/lldb/pytstates.py"
LLDB = "lldb-19"
TIMEOUT = 180

# Three threads, each in its own function, print their LWP and the function's name, then sleep in
# C (time.sleep) so that the function stays the innermost Python frame; the main thread the same
# at module level.
TARGET = r'''
import json, os, sys, threading, time
def report():  # one write per line: the threads' lines do not interleave
    line = json.dumps({"lwp": threading.get_native_id(), "function": sys._getframe(1).f_code.co_name})
    os.write(1, (line + "\n").encode())
def smoke_alpha():
    report()
    while True:
        time.sleep(3600)
def smoke_beta():
    report()
    while True:
        time.sleep(3600)
def smoke_gamma():
    report()
    while True:
        time.sleep(3600)
for f in (smoke_alpha, smoke_beta, smoke_gamma):
    threading.Thread(target=f, daemon=True).start()
report()
while True:
    time.sleep(3600)
'''

# The sleeping system calls of time.sleep (3.9: select; 3.11+: clock_nanosleep), per machine.
SLEEP_SYSCALLS = {"x86_64": {23, 35, 230, 270}, "aarch64": {72, 101, 115}}


class Smoke:
    def __init__(self, suite, tree):
        self.suite, self.tree = suite, tree
        self.failed, self.not_run, self.passed = [], [], []

    def ok(self, step, what):
        self.passed.append(step)
        print("  ok      %-22s %s" % (step, what), flush=True)

    def fail(self, step, why):
        self.failed.append(step)
        print("  FAILED  %-22s %s" % (step, why), flush=True)

    def cannot(self, step, why):
        """A step that could not run: allowed for the stand-in tree only."""
        if self.tree == "archive":
            self.fail(step, "could not run: " + why)
        else:
            self.not_run.append(step)
            print("  NOT RUN %-22s %s" % (step, why), flush=True)


def run(argv, timeout=TIMEOUT, env=None):
    """(status, stdout, stderr); status None when it timed out (then killed). env: added variables."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           universal_newlines=True, errors="replace",
                           env=dict(os.environ, **env) if env else None)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or "", e.stderr or ""
    except OSError as e:
        return 127, "", str(e)


def first_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[0] if lines else ""


def loader_error(text):
    """The dynamic loader's or a front end's refusal to load (a binary built for another glibc,
    a missing library): the reason a stand-in build cannot run in an older root."""
    m = re.search(r"(version `[^']+' not found[^\n]*|[^\s]+ => not found|cannot open shared object file[^\n]*"
                  r"|built for cpython-[^\n]*|undefined symbol[^\n]*)", text)
    return m.group(1) if m else None


def versions():
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else "?"
    s, out, _ = run(["gdb", "--version"])
    gdb = first_line(out) if s == 0 else "none"
    s, out, _ = run(["gdb", "-nx", "-batch", "-ex", "python import sys; print(sys.version.split()[0])"])
    gdb_py = first_line(out) if s == 0 else "?"
    lldb = "none"
    if shutil.which(LLDB):
        s, out, _ = run([LLDB, "--version"])
        lldb = first_line(out) if s == 0 else "?"
    try:
        with open("/etc/debian_version") as f:
            debian = f.read().strip()
    except OSError:
        debian = "?"
    print("versions: Debian %s (%s), %s, Python %s, gdb %s (its Python %s), lldb: %s"
          % (debian, platform.machine(), glibc, sys.version.split()[0], gdb, gdb_py, lldb), flush=True)


def start_target():
    p = subprocess.Popen([sys.executable, "-c", TARGET], stdout=subprocess.PIPE, universal_newlines=True)
    facts = {}
    deadline = time.time() + 30
    while len(facts) < 4 and time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        row = json.loads(line)
        facts[row["lwp"]] = row["function"]
    if len(facts) != 4:
        p.kill()
        raise SystemExit("the target printed %d of its 4 threads" % len(facts))
    # Each thread printed before it sleeps: wait until all four sleep, so the innermost frame
    # pytstates reads is the function itself, not report().
    want = SLEEP_SYSCALLS.get(platform.machine())
    while want and time.time() < deadline:
        numbers = []
        for lwp in facts:
            try:
                with open("/proc/%d/task/%d/syscall" % (p.pid, lwp)) as f:
                    numbers.append(int(f.read().split()[0]))
            except (OSError, ValueError, IndexError):
                numbers.append(-1)
        if all(n in want for n in numbers):
            break
        time.sleep(0.05)
    else:
        if want:
            p.kill()
            raise SystemExit("the target's threads did not all reach time.sleep")
    return p, facts


def tstates_of(report):
    return [t for r in report.get("runtimes", []) for i in r.get("interpreters", []) for t in i.get("tstates", [])]


def check_report(smoke, step, report, facts, oracle=None, note=None):
    """The report against the program's own facts and, when given, the debugger's thread list."""
    problems = []
    tstates = tstates_of(report)
    if len(tstates) != len(facts):
        problems.append("%d thread states, the program has %d" % (len(tstates), len(facts)))
    got = {}
    for t in tstates:
        frames = t.get("frames") or []
        got[t.get("lwp")] = frames[0].get("function") if frames else None
    if sorted(got, key=str) != sorted(facts, key=str):
        problems.append("thread states on LWPs %s, the program's %s" % (sorted(got, key=str), sorted(facts)))
    for lwp, function in sorted(facts.items()):
        if lwp in got and got[lwp] != function:
            problems.append("LWP %d innermost %s, the program says %s" % (lwp, got[lwp], function))
    threads = sorted(t.get("lwp") for t in report.get("threads", []))
    if threads != sorted(facts):
        problems.append("threads %s, the program's %s" % (threads, sorted(facts)))
    if oracle is not None and sorted(oracle[1]) != threads:
        problems.append("threads %s, %s %s" % (threads, oracle[0], sorted(oracle[1])))
    errors = [f for f in report.get("findings", []) if f.get("severity") == "error"]
    if errors:
        problems.append("error findings: %s" % "; ".join(f.get("message", "?") for f in errors))
    if problems:
        smoke.fail(step, "; ".join(problems))
    else:
        smoke.ok(step, "%d thread states, LWPs %s, innermost %s%s" % (
            len(tstates), " ".join(str(l) for l in sorted(facts)),
            " ".join(facts[l] for l in sorted(facts)),
            "; %s agrees" % oracle[0] if oracle is not None else "") + ("; " + note if note else ""))


def parse_json_after(text, marker):
    """The first JSON object after marker in a debugger's output (its own lines come before)."""
    at = text.find(marker)
    if at < 0:
        return None
    at = text.find("{", at)
    if at < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[at:])[0]
    except ValueError:
        return None


def gdb_threads(smoke, step, target):
    """gdb's own `info threads` (no front end): the second oracle for the CLI."""
    s, out, err = run(["gdb", "-nx", "-batch", "-ex", "info threads"] + target)
    lwps = sorted({int(m) for m in re.findall(r"LWP (\d+)", out)})
    if not lwps:
        smoke.fail(step, "gdb's info threads listed no thread (exit status %s): %s" % (s, first_line(err)))
        return None
    print("%s: gdb's info threads: LWPs %s" % (step, " ".join(str(l) for l in lwps)), flush=True)
    return ("gdb's info threads", lwps)


def cli(smoke, step, target_args, facts, gdb_lwps):
    s, out, err = run([CLI, "check"] + target_args + ["--json"])
    if s is None:
        smoke.fail(step, "timed out")
        return
    why = loader_error(err) if s != 0 and not out.strip() else None
    if why:  # the dynamic loader refused it (exit status 127, or 1 for a missing symbol version)
        smoke.cannot(step, "the CLI does not start here: " + why)
        return
    if s not in (0, 1):
        smoke.fail(step, "exit status %s: %s" % (s, first_line(err)))
        return
    try:
        report = json.loads(out)
    except ValueError:
        smoke.fail(step, "not JSON: %s" % first_line(out))
        return
    check_report(smoke, step, report, facts, gdb_lwps)


def debugger(smoke, step, argv, thread_marker, json_marker, lwp_pattern, oracle_name, facts, env=None,
             want_binding=None):
    s, out, err = run(argv, env=env)
    text = out + "\n" + err
    if s is None:
        smoke.fail(step, "timed out")
        return
    report = parse_json_after(out, json_marker)
    if report is None:
        why = loader_error(text)
        # What the debugger said after the marker: its error line, else its first line of its own
        # (lldb echoes each command as "(lldb) ...").
        after = text[text.rfind(json_marker) + len(json_marker):] if json_marker in text else text
        said = [l.strip() for l in after.splitlines() if l.strip() and not l.startswith("(lldb)")]
        errors = [l for l in said if re.search(r"error|undefined|not loaded|Traceback", l, re.I)]
        line = (errors or said or [""])[0]
        if why:
            smoke.cannot(step, "the front end does not load here: " + why)
        else:
            smoke.fail(step, "no JSON (exit status %s): %s" % (s, line))
        return
    section = out[out.find(thread_marker):out.find(json_marker)] if thread_marker in out else ""
    lwps = sorted({int(m) for m in re.findall(lwp_pattern, section)})
    if not lwps:
        smoke.fail(step, "the debugger listed no thread: %s" % first_line(section))
        return
    binding = re.search(r"^pytstates binding: (.*)$", out, re.M)
    if want_binding and not (binding and want_binding in binding.group(1)):
        smoke.fail(step, "the front end did not load %s: %s" % (
            want_binding, binding.group(1) if binding else "no binding printed"))
        return
    check_report(smoke, step, report, facts, (oracle_name, lwps),
                 "binding " + (binding.group(1).strip() if binding else "?"))


# Which binding the front end loaded (its loader, pytstates/core.py: `core`, the pybind11 module
# built for the debugger's Python, else ctypes over libpytstates.so.0; `error` when neither),
# printed after the report. lldb imports the package under another name: found by its attributes.
BINDING = ("import sys; print('pytstates binding: %s' % (', '.join(sorted(set("
           "(m.core.__name__ if m.core else 'none: %s' % m.error) for n, m in list(sys.modules.items()) "
           "if n.endswith('.core') and hasattr(m, 'core') and hasattr(m, 'error')))) or '?'))")


def gdb_argv(target):
    return (["gdb", "-nx", "-batch", "-ex", "echo @@threads\\n", "-ex", "info threads",
             "-ex", "echo @@pytstates\\n", "-ex", "source " + GDB_FE, "-ex", "py-tstates-check --json",
             "-ex", "python " + BINDING] + target)


def lldb_argv(target):
    return ([LLDB, "--no-lldbinit", "--batch", "-o", "script print('@@threads')", "-o", "thread list",
             "-o", "script print('@@pytstates')", "-o", "command script import " + LLDB_FE,
             "-o", "py-tstates-check --json", "-o", "script " + BINDING] + target)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--tree", choices=("archive", "build"), required=True)
    args = ap.parse_args()
    smoke = Smoke(args.suite, args.tree)
    print("roots[%s]: pytstates from the %s in %s" % (args.suite, "portable archive" if args.tree == "archive"
                                                       else "build tree (stand-in)", PREFIX), flush=True)
    versions()
    s, out, _ = run([CLI, "--version"])
    print("pytstates --version: %s" % (first_line(out) if s == 0 else "exit status %s" % s), flush=True)

    target, facts = start_target()
    exe = os.readlink("/proc/%d/exe" % target.pid)
    work = tempfile.mkdtemp(prefix="pytstates-smoke-")
    try:
        print("target: pid %d (%s), LWPs and functions as it printed them: %s" % (
            target.pid, exe, ", ".join("%d %s" % (l, facts[l]) for l in sorted(facts))), flush=True)
        cli(smoke, "cli check --pid", ["--pid", str(target.pid)], facts,
            gdb_threads(smoke, "live", ["-p", str(target.pid)]))

        core = None
        s, out, err = run(["gcore", "-o", os.path.join(work, "core"), str(target.pid)])
        path = os.path.join(work, "core.%d" % target.pid)
        if s == 0 and os.path.exists(path):
            core = path
            print("gcore: %s (%d MB)" % (core, os.path.getsize(core) // 2**20), flush=True)
        else:
            smoke.fail("gcore", "exit status %s: %s" % (s, first_line(err)))
        if core:
            cli(smoke, "cli check --core", ["--core", core], facts, gdb_threads(smoke, "core", [exe, core]))

        gdb_lwp = r"LWP (\d+)"
        if not os.path.exists(GDB_FE):
            smoke.cannot("gdb front end", "%s is not installed (branch engine's layout)" % GDB_FE)
        else:
            debugger(smoke, "gdb front end --pid", gdb_argv(["-p", str(target.pid)]),
                     "@@threads", "@@pytstates", gdb_lwp, "gdb's info threads", facts)
            if core:
                debugger(smoke, "gdb front end core", gdb_argv([exe, core]),
                         "@@threads", "@@pytstates", gdb_lwp, "gdb's info threads", facts)
            # The same through ctypes, the path of a gdb whose Python has no module in the tree.
            ctypes = {"PYTSTATES_CORE": "ctypes"}
            debugger(smoke, "gdb ctypes --pid", gdb_argv(["-p", str(target.pid)]),
                     "@@threads", "@@pytstates", gdb_lwp, "gdb's info threads", facts, ctypes, "_ctypes_core")
            if core:
                debugger(smoke, "gdb ctypes core", gdb_argv([exe, core]),
                         "@@threads", "@@pytstates", gdb_lwp, "gdb's info threads", facts, ctypes, "_ctypes_core")

        if shutil.which(LLDB):
            lldb_lwp = r"tid = (\d+)"
            if not os.path.exists(LLDB_FE):
                smoke.cannot("lldb front end", "%s is not installed (branch engine's layout)" % LLDB_FE)
            else:
                debugger(smoke, "lldb front end --pid", lldb_argv(["-p", str(target.pid)]),
                         "@@threads", "@@pytstates", lldb_lwp, "lldb's thread list", facts)
                if core:
                    debugger(smoke, "lldb front end core", lldb_argv(["-c", core, exe]),
                             "@@threads", "@@pytstates", lldb_lwp, "lldb's thread list", facts)
        elif args.suite == "trixie":
            smoke.fail("lldb front end", "%s is not in the trixie root" % LLDB)

        # Every attach detached: the target runs on, not left stopped.
        if target.poll() is not None:
            smoke.fail("target", "the target exited (status %s) during the test" % target.returncode)
        else:
            stopped = []
            for lwp in sorted(facts):
                with open("/proc/%d/task/%d/stat" % (target.pid, lwp)) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                        stopped.append(lwp)
            if stopped:
                smoke.fail("target", "LWPs %s left stopped" % stopped)
    finally:
        target.kill()
        target.wait()
        shutil.rmtree(work, ignore_errors=True)

    print("roots[%s]: %d ok, %d failed%s, %d not run%s" % (
        args.suite, len(smoke.passed), len(smoke.failed),
        " (" + ", ".join(smoke.failed) + ")" if smoke.failed else "", len(smoke.not_run),
        " (" + ", ".join(smoke.not_run) + ")" if smoke.not_run else ""), flush=True)
    if smoke.failed:
        return 1
    return 77 if smoke.not_run else 0


if __name__ == "__main__":
    sys.exit(main())
