# SPDX-License-Identifier: Apache-2.0
"""Python threads in known places, for every CPython from 3.8 on (run by the interpreter under test).

Four workers block in C functions called straight from their own Python function, with the GIL
released, so that each one's innermost Python frame is exactly known:
  waits_on_a_lock      _thread.lock.acquire()
  sleeps_in_a_loop     time.sleep() in a one-line loop
  waits_on_a_queue     queue.SimpleQueue.get()
  waits_in_select      select.select() on a pipe nobody writes
the main thread blocks in main_thread_waits (lock.acquire()), and holds_the_gil calls read() on a
pipe nobody writes through ctypes.PyDLL(None): PyDLL keeps the GIL, so that thread holds it for as
long as the process is paused there.

Each thread reports its LWP, pthread_t, PyThreadState_Get(), PyGILState_GetThisThreadState() and
the function, file and line of its blocking call; the line comes from sys._getframe().f_lineno
evaluated in the blocking statement itself (an argument of the blocking call). The GIL holder
waits until sys._current_frames() shows every other thread at that line, then prints
`FACTS {json}` and `READY` from inside the argument list of its read(), and blocks there.
"""
import ctypes
import json
import os
import platform
import queue
import select
import sys
import threading
import time

api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
api.PyGILState_GetThisThreadState.restype = ctypes.c_void_p
libc = ctypes.PyDLL(None)
libc.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
libc.read.restype = ctypes.c_ssize_t

WAITERS = 5  # four workers and the main thread
never_released = threading.Lock()
never_released.acquire()
main_done = threading.Lock()
main_done.acquire()
select_r, select_w = os.pipe()
read_r, read_w = os.pipe()
facts = {}
parked_all = threading.Condition()


def ptr(value):
    return "0x%x" % (value or 0)


def me(line):
    """What the calling thread is, and where its caller blocks (the caller's function and file)."""
    caller = sys._getframe(2)
    return {"name": threading.current_thread().name,
            "lwp": threading.get_native_id(),
            "pthread": "0x%x" % threading.get_ident(),
            "tstate": ptr(api.PyThreadState_Get()),
            "autotss": ptr(api.PyGILState_GetThisThreadState()),
            "function": caller.f_code.co_name,
            "file": os.path.basename(caller.f_code.co_filename),
            "line": line}


def parked(line, value=True):
    """Called in the argument list of the blocking call: records the caller once; returns value."""
    ident = threading.get_ident()
    if ident not in facts:
        fact = me(line)
        with parked_all:
            facts[ident] = fact
            parked_all.notify_all()
    return value


def waits_on_a_lock():
    never_released.acquire(parked(sys._getframe().f_lineno))


def sleeps_in_a_loop():
    while True: time.sleep(parked(sys._getframe().f_lineno, 0.05))  # noqa: E701 (one line: one line number)


def waits_on_a_queue():
    queue.SimpleQueue().get(parked(sys._getframe().f_lineno))


def waits_in_select():
    select.select([select_r], [], [], parked(sys._getframe().f_lineno, None))


def main_thread_waits():
    main_done.acquire(parked(sys._getframe().f_lineno))


def ready(line):
    """The GIL holder's last words before read(): FACTS and READY; returns read()'s byte count."""
    holder = me(line)
    summary = {"pid": os.getpid(), "version": platform.python_version(), "executable": sys.executable,
               "gil_holder_lwp": holder["lwp"], "threads": list(facts.values()) + [holder]}
    print("FACTS " + json.dumps(summary), flush=True)
    print("READY", flush=True)
    return 1


def holds_the_gil():
    buf = ctypes.create_string_buffer(1)
    with parked_all:
        while len(facts) < WAITERS:
            parked_all.wait(1)
    # Until each of the others is in its blocking call (the top frame it reported): from then on
    # none of them can leave that line, GIL or not.
    deadline = time.monotonic() + 30
    while True:
        current = sys._current_frames()
        late = [f["name"] for ident, f in facts.items()
                if ident not in current or (current[ident].f_code.co_name, current[ident].f_lineno) != (f["function"], f["line"])]
        del current
        if not late:
            break
        if time.monotonic() > deadline:
            print("NOT PARKED: " + ", ".join(late), flush=True)
            os._exit(3)
        time.sleep(0.01)
    libc.read(read_r, buf, ready(sys._getframe().f_lineno))


def main():
    for target in (waits_on_a_lock, sleeps_in_a_loop, waits_on_a_queue, waits_in_select):
        threading.Thread(target=target, name=target.__name__, daemon=True).start()
    threading.Thread(target=holds_the_gil, name="holds_the_gil", daemon=True).start()
    main_thread_waits()


if __name__ == "__main__":
    main()
