# SPDX-License-Identifier: Apache-2.0
"""Real servers from Debian started for one test and stopped by it: each in a temporary directory,
bound to 127.0.0.1 only, in its own process group (so that a failure still ends every process it
made, by that group's id), with kernel cores allowed."""
import contextlib
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402

SCENARIOS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "embedders")


class ServerError(Exception):
    pass


def free_port():
    """A port on 127.0.0.1 nobody listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def allow_cores():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


@contextlib.contextmanager
def workdir(prefix, world_writable=(), files=()):
    """A temporary directory readable by the servers' users, with state/ (the facts the apps write,
    the release FIFO and stop.flag) and any other subdirectory named, writable by them, and a copy
    of truth.py, wsgi_app.py and the scenario files named; removed at the end."""
    path = tempfile.mkdtemp(prefix="pytstates-%s-" % prefix)
    try:
        os.chmod(path, 0o755)
        for sub in ("state",) + tuple(world_writable):
            os.mkdir(os.path.join(path, sub))
            os.chmod(os.path.join(path, sub), 0o777)
        os.mkfifo(os.path.join(path, "state", "release.fifo"), 0o666)
        os.chmod(os.path.join(path, "state", "release.fifo"), 0o666)
        reset_mapped(os.path.join(path, "state"))
        for name in ("truth.py", "wsgi_app.py") + tuple(files):
            shutil.copy(os.path.join(SCENARIOS, name), os.path.join(path, name))
            os.chmod(os.path.join(path, name), 0o644)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def process_group(argv, cwd, log, user=None, stop_signal=signal.SIGTERM, env=None):
    """Starts argv as the leader of a new process group; at the end sends stop_signal to the
    leader, waits, and kills whatever is left of the group."""
    def child():
        allow_cores()
        if user:  # not runuser: its PAM session would set the core limit back to 0
            import pwd
            entry = pwd.getpwnam(user)
            os.initgroups(user, entry.pw_gid)
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
        # after setuid, which clears it: the leader dies with the test even when the test is
        # killed (a ctest timeout), and the servers' own children follow their leader
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    out = open(log, "ab")
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=child, env=env)
    try:
        yield proc
    finally:
        out.close()
        stop_group(proc, stop_signal)


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def stop_group(proc, stop_signal=signal.SIGTERM, timeout=20):
    pgid = proc.pid  # start_new_session: the leader's pid is the group's id
    if proc.poll() is None:
        try:
            os.kill(proc.pid, stop_signal)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    deadline = time.monotonic() + timeout
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if group_alive(pgid):
        os.killpg(pgid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def get(port, path, timeout=30):
    """(status, parsed JSON body) of GET http://127.0.0.1:PORT/PATH."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        try:
            return resp.status, json.loads(body)
        except ValueError:
            return resp.status, body.decode(errors="replace")
    finally:
        conn.close()


def wait_answering(port, path, proc, log, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError("the server exited with %s:\n%s" % (proc.returncode, tail(log)))
        try:
            status, body = get(port, path, timeout=5)
            if status == 200:
                return body
        except OSError:
            pass
        time.sleep(0.2)
    raise ServerError("the server does not answer %s on 127.0.0.1:%d:\n%s" % (path, port, tail(log)))


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


def read_facts(state_dir):
    out = []
    for name in sorted(os.listdir(state_dir)):
        if name.endswith(".json"):
            with open(os.path.join(state_dir, name)) as f:
                out.append(json.load(f))
    held = os.path.join(state_dir, "held.fact")
    if os.path.exists(held):
        with open(held, "rb") as f:
            data = f.read().rstrip(b"\0")
        with contextlib.suppress(ValueError):  # still being written
            out.append(json.loads(data)) if data else None
    return out


def clear_facts(state_dir):
    for name in os.listdir(state_dir):
        if name.endswith(".json"):
            os.unlink(os.path.join(state_dir, name))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(state_dir, "stop"))
    reset_mapped(state_dir)


def thread_syscall(pid, lwp):
    """The system call number LWP is in now, or None when it runs (or is gone)."""
    try:
        with open("/proc/%d/task/%d/syscall" % (pid, lwp)) as f:
            first = f.read().split()[0]
    except (OSError, IndexError):
        return None
    return None if first == "running" or first.startswith("-") else int(first)


OPENAT = 257  # x86_64: where truth.wait_for_release blocks


def wait_parked(state_dir, parked, busy, timeout=60):
    """Waits until `parked` calls recorded themselves and block in openat(2) on the release FIFO
    (or the system call their fact names in blocks_in; None: any) and `busy` recorded themselves;
    returns their facts."""
    deadline = time.monotonic() + timeout
    facts = []
    while time.monotonic() < deadline:
        facts = read_facts(state_dir)
        spinning = [f for f in facts if f["function"].startswith("spin")]
        waiting = [f for f in facts if not f["function"].startswith("spin")]
        if len(spinning) == busy and len(waiting) == parked and \
                all(thread_syscall(f["pid"], f["native_id"]) == f.get("blocks_in", OPENAT)
                    for f in waiting if f.get("blocks_in", OPENAT) is not None):
            time.sleep(0.5)  # the spinner is past its record and in its loop; plpy in pg_sleep
            return facts
        time.sleep(0.1)
    raise ServerError("expected %d parked and %d busy calls, have: %s" % (parked, busy, facts))


MAPPED = (("stop.flag", 1), ("held.fact", 4096))  # truth.open_mapped's files and their sizes


def reset_mapped(state_dir):
    """stop.flag (one byte that truth.spin_holding watches) and held.fact (where
    truth.record_mapped writes), zeroed in place: a mapping an app holds stays valid."""
    for name, size in MAPPED:
        path = os.path.join(state_dir, name)
        with open(path, "r+b" if os.path.exists(path) else "wb") as f:
            f.write(bytes(size))
        os.chmod(path, 0o666)


def stop_holding(state_dir):
    """Ends truth.spin_holding: its mapping of stop.flag sees the byte (no system call there)."""
    with open(os.path.join(state_dir, "stop.flag"), "r+b") as f:
        f.write(b"\1")


def release(state_dir, timeout=10):
    """Lets every call parked on the release FIFO go, and the spinners stop."""
    open(os.path.join(state_dir, "stop"), "w").close()
    stop_holding(state_dir)
    fifo = os.path.join(state_dir, "release.fifo")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader (left)
            return
        os.close(fd)
        time.sleep(0.05)


def kernel_core(pid, where, sig=signal.SIGABRT, timeout=60):
    """Kills pid with sig and waits for the kernel's core (core_pattern "core") in `where`, its
    working directory at the time; returns the core's path."""
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern != "core":
        raise ServerError("kernel cores are not written as 'core' in the working directory here (%r)" % pattern)
    core = os.path.join(where, "core")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(core)
    os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # the kernel writes the core before the process becomes a zombie
        if zombie(pid) and os.path.exists(core):
            return core
        time.sleep(0.2)
    raise ServerError("no kernel core of %d in %s" % (pid, where))


def zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def gcore(pid, where):
    return scenario.gcore(pid, os.path.join(where, "gcore"), error=ServerError)
