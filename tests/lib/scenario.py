# SPDX-License-Identifier: Apache-2.0
"""Run a scenario program to its pause point (or its crash) and take a real core of it.

A scenario prints one line `FACTS {json}` with what it knows about itself, then `READY`, then
pauses. take_core() returns (facts, core_path); the caller removes the directory it lives in.
"""
import atexit
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import json_contract  # tests/lib, beside this file

# The suite's own Python and lldb (Debian 12: python3.11 and lldb-14; Debian 13: python3.13 and
# lldb-19): the drivers run under the suite's /usr/bin/python3, and the lldb plugin is built for the
# default lldb (/usr/bin/lldb, plugin/lldb/CMakeLists.txt).
PYTHON_VERSION = "%d.%d" % sys.version_info[:2]
PYTHON = "/usr/bin/python" + PYTHON_VERSION
LIBPYTHON = "libpython%s.so.1.0" % PYTHON_VERSION
LLDB = "lldb"

READY_TIMEOUT = 60
PYTSTATES_TIMEOUT = 200
# Every test reads DWARF itself: answers cached per build-id by an earlier test (or an earlier run)
# would leave the DWARF readers untested and make two reports of one program differ in
# runtimes[].layout_cached. The cache has its own test (production_test.py layout-cache).
os.environ.setdefault("PYTSTATES_NO_CACHE", "1")


class ScenarioError(Exception):
    pass


def read_facts(proc, deadline, error=None, who="the scenario"):
    """The FACTS a program prints before READY (error: the exception class to raise, ScenarioError
    by default; who: how the message names the program)."""
    error = error or ScenarioError
    facts = None
    lines = []
    # readline() blocks: a program stuck before READY is killed at the deadline, which ends the
    # read, so that the failure says what it printed instead of running into ctest's timeout.
    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), proc.kill)
    watchdog.start()
    try:
        while True:
            line = proc.stdout.readline()
            if not line:
                break
            line = line.decode(errors="replace").rstrip("\n")
            lines.append(line)
            if line.startswith("FACTS "):
                facts = json.loads(line[len("FACTS "):])
            elif line == "READY":
                if facts is None:
                    raise error("READY before FACTS")
                return facts
    finally:
        watchdog.cancel()
    late = " by its deadline (killed)" if time.monotonic() >= deadline else ""
    raise error(who + " did not become READY" + late + "; it printed:\n" + "\n".join(lines))


def kernel_core_pattern_ok():
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    return not pattern.startswith("|"), pattern


def gcore(pid, prefix, timeout=120, error=None):
    """gdb's gcore of a running process: returns PREFIX.PID. gcore is a shell script whose gdb is its
    child: on a timeout both are killed (killing the script alone leaves gdb holding the output
    pipe, and the wait for that pipe does not end), and the core is taken once more. A gdb that
    hangs twice is an error that names what it printed."""
    error = error or ScenarioError
    core = "%s.%d" % (prefix, pid)
    said = ""
    for attempt in (1, 2):
        gdb = subprocess.Popen(["gcore", "-o", prefix, str(pid)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
        try:
            said = gdb.communicate(timeout=timeout)[0].decode(errors="replace")
        except subprocess.TimeoutExpired:
            os.killpg(gdb.pid, signal.SIGKILL)
            said = gdb.communicate()[0].decode(errors="replace")
            print("gcore of %d did not end in %g s (attempt %d); it printed: %s" % (pid, timeout, attempt, said[-1000:]),
                  file=sys.stderr)
            with contextlib.suppress(OSError):
                os.unlink(core)
            continue
        if os.path.exists(core):
            return core
        break
    raise error("gcore made no core: " + said[-2000:])


def quiet_status(kind):
    """pytstates' exit status on a core of take_core's kind with no error finding and no hang: 1 for
    'kernel' and 'crash', whose process died of a signal (SIGABRT sent while paused, or its own
    crash): a CRASH, exit status 1 (docs/usage.md); 0 for a gcore or a live process."""
    return 1 if kind in ("kernel", "crash") else 0


def take_core(argv, kind="gcore", workdir=None, env=None, after_ready=None):
    """kind: 'gcore' (gdb's gcore while paused), 'kernel' (SIGABRT while paused, the kernel's core),
    'crash' (no pause expected after READY: let it die by itself and take the kernel's core)."""
    workdir = workdir or tempfile.mkdtemp(prefix="pytstates-")

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    if kind != "gcore":
        ok, pattern = kernel_core_pattern_ok()
        if not ok:
            raise ScenarioError("kernel cores go to a pipe here (core_pattern %r); set it to 'core'" % pattern)
    proc = subprocess.Popen(argv, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, preexec_fn=limits)
    try:
        facts = read_facts(proc, time.monotonic() + READY_TIMEOUT)
        if after_ready:
            after_ready(proc, facts)
        if kind == "gcore":
            core = gcore(proc.pid, os.path.join(workdir, "core"))
            proc.kill()
            proc.wait(timeout=30)
        else:
            if kind == "kernel":
                time.sleep(0.5)  # READY comes just before the last blocking call: let it get there
                proc.send_signal(signal.SIGABRT)
            proc.wait(timeout=120)
            if proc.returncode >= 0:
                raise ScenarioError("the scenario exited with %d instead of dying by a signal" % proc.returncode)
            core = os.path.join(workdir, "core")
            for _ in range(100):  # the kernel finishes writing after the parent sees the death
                if os.path.exists(core):
                    break
                time.sleep(0.1)
            if not os.path.exists(core):
                raise ScenarioError("the kernel wrote no core in %s (core_pattern, ulimit?)" % workdir)
        return facts, core
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start(argv, workdir=None, env=None):
    """Starts a scenario and waits for READY; returns (proc, facts). The caller ends it."""
    if workdir is None:
        workdir = tempfile.mkdtemp(prefix="pytstates-")
        atexit.register(shutil.rmtree, workdir, True)
    proc = subprocess.Popen(argv, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env)
    try:
        return proc, read_facts(proc, time.monotonic() + READY_TIMEOUT)
    except Exception:
        proc.kill()
        proc.wait()
        raise


@contextlib.contextmanager
def running(argv, workdir=None, env=None):
    """with running(argv) as (proc, facts): the scenario paused at READY, killed afterwards."""
    proc, facts = start(argv, workdir, env)
    try:
        yield proc, facts
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def still_answers(proc, timeout=10):
    """True when the paused scenario answers "ping" with "pong" and then ends with status 0 on "quit"."""
    import select
    proc.stdin.write(b"ping\n")
    proc.stdin.flush()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return False
        line = proc.stdout.readline()
        if not line:
            return False
        if line.strip() == b"pong":
            proc.stdin.write(b"quit\n")
            proc.stdin.flush()
            return proc.wait(timeout=timeout) == 0
    return False


def offline_env():
    """This environment without DEBUGINFOD_URLS (Debian's profile sets it): tests never fetch
    from a server they did not start themselves."""
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    return env


def run_pytstates(pytstates, args, expect_status=None, env=None):
    """Runs pytstates; returns (status, parsed JSON or text, stderr)."""
    # Under ctest's 300 s, so that a pytstates that does not end is named as the one that hung.
    try:
        out = subprocess.run([pytstates] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=PYTSTATES_TIMEOUT,
                             env=offline_env() if env is None else env)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("pytstates %s did not end in %d s; stderr: %s" % (
            " ".join(args), PYTSTATES_TIMEOUT, (e.stderr or b"").decode(errors="replace")[-2000:])) from None
    stdout = out.stdout.decode(errors="replace")
    stderr = out.stderr.decode(errors="replace")
    if expect_status is not None and out.returncode != expect_status:
        raise AssertionError("pytstates %s exited %d, expected %d\nstderr: %s\nstdout: %s" % (
            " ".join(args), out.returncode, expect_status, stderr, stdout[:4000]))
    if "--json" in args and out.returncode in (0, 1):
        return out.returncode, json_contract.loads(stdout, "pytstates " + " ".join(args)), stderr
    return out.returncode, stdout, stderr


def cleanup(path):
    shutil.rmtree(os.path.dirname(path) if os.path.isfile(path) else path, ignore_errors=True)
