# SPDX-License-Identifier: Apache-2.0
"""What a request (or a call) knows about itself, written where the test reads it: the OS thread
that runs it (threading.get_native_id()), its process, the interpreter it runs in (CPython's own
id for it), and the function it parks in. Shared by every embedder scenario."""
import json
import os
import threading


def interpreter_id():
    """The id CPython gives the running interpreter (0 for the main one)."""
    try:
        import _xxsubinterpreters as interpreters  # 3.8-3.12
    except ImportError:
        import _interpreters as interpreters  # 3.13+
    current = interpreters.get_current()
    return int(current[0] if isinstance(current, tuple) else current)


def record(state_dir, function, **extra):
    """Writes state_dir/FUNCTION-LWP.json atomically (the test polls for it) and returns the fact."""
    fact = dict(extra, function=function, native_id=threading.get_native_id(), pid=os.getpid(),
                interp=interpreter_id())
    path = os.path.join(state_dir, "%s-%d.json" % (function, fact["native_id"]))
    with open(path + ".tmp", "w") as f:
        json.dump(fact, f)
    os.rename(path + ".tmp", path)
    return fact


def wait_for_release(state_dir):
    """Blocks in open(2) on the release FIFO, the GIL released, until the test opens it for
    writing: a parked call with no Python frame above the caller's."""
    with open(os.path.join(state_dir, "release.fifo"), "rb") as fifo:
        fifo.read()


def spin(state_dir, seconds=600):
    """Runs Python code (holding the GIL but for the interpreter's switch interval) until the
    test creates state_dir/stop; looks for it once a second so that it stays busy."""
    import time
    stop = os.path.join(state_dir, "stop")
    deadline = time.monotonic() + seconds
    next_look = 0.0
    n = 0
    while True:
        n += 1
        if n & 0xffff == 0:
            now = time.monotonic()
            if now > deadline:
                return n
            if now > next_look:
                if os.path.exists(stop):
                    return n
                next_look = now + 1.0



# A call that must hold the GIL from the moment its embedder hands it over (an embedder that takes
# the GIL with one thread state and swaps in another, mod_python's and WeeChat's way) may make no
# system call before it spins: each would let the GIL go and take it back with the running state.
# It records itself and learns when to stop through shared mappings the test made, opened
# beforehand by open_mapped().
def open_mapped(state_dir, name):
    """A shared, writable mapping of state_dir/NAME (made by the test: servers.reset_mapped)."""
    import mmap
    with open(os.path.join(state_dir, name), "r+b") as f:
        return mmap.mmap(f.fileno(), 0)


def record_mapped(fact_map, function, **extra):
    """record() into a mapping of a NUL-padded file (servers.read_facts reads it): no system call."""
    fact = dict(extra, function=function, native_id=threading.get_native_id(), pid=os.getpid(),
                interp=interpreter_id())
    data = json.dumps(fact).encode()
    fact_map[len(data):] = bytes(len(fact_map) - len(data))
    fact_map[:len(data)] = data
    return fact


def spin_holding(stop_map, seconds=300):
    """Runs Python code and never lets the GIL go until the test writes a non-zero byte to the
    mapped stop.flag, or `seconds` pass: a thread that holds the GIL however long others wait
    (CPython 3.9-3.12 asks only the waiter's own interpreter's threads to drop it)."""
    import time
    deadline = time.monotonic() + seconds
    n = 0
    while stop_map[0] == 0:
        n += 1
        if n & 0xffff == 0 and time.monotonic() > deadline:
            break
    return n
