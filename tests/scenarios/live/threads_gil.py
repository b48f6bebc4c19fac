"""Python threads in known places, for every CPython from 3.8 on: three workers blocked in Python
with the GIL released (Event.wait, a sleep loop, Queue.get) and one that holds the GIL while it
blocks in read() called through ctypes.PyDLL (which keeps the GIL). Prints FACTS (each thread's
LWP, pthread, tstate, PyGILState tstate and the line it waits on) and READY, then stays there."""
import ctypes
import json
import os
import platform
import queue
import sys
import threading
import time

api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
api.PyGILState_GetThisThreadState.restype = ctypes.c_void_p
libc = ctypes.PyDLL(None)
read_fd, _write_fd = os.pipe()
facts, lock = [], threading.Lock()
all_parked = threading.Barrier(4)
release = threading.Event()


def me(line):
    caller = sys._getframe(1)
    return {"lwp": threading.get_native_id() if hasattr(threading, "get_native_id") else None,
            "pthread": hex(threading.get_ident()), "tstate": hex(api.PyThreadState_Get()),
            "autotss": hex(api.PyGILState_GetThisThreadState()),
            "function": caller.f_code.co_name, "file": os.path.basename(caller.f_code.co_filename), "line": line}


def record(fact):
    with lock:
        facts.append(fact)
    return True


def waits_on_event():
    record(me(sys._getframe().f_lineno + 2))
    all_parked.wait()
    release.wait()


def sleeps_in_a_loop():
    record(me(sys._getframe().f_lineno + 3))
    all_parked.wait()
    while not release.is_set():
        time.sleep(0.05)


def waits_on_a_queue():
    q = queue.Queue()
    record(me(sys._getframe().f_lineno + 2))
    all_parked.wait()
    q.get()


def holds_the_gil():
    buf = ctypes.create_string_buffer(1)
    fact = me(sys._getframe().f_lineno + 5)
    all_parked.wait()
    time.sleep(0.3)  # the others reach their waits
    print("FACTS " + json.dumps(dict(summary, gil_holder_lwp=fact["lwp"], threads=facts + [fact])), flush=True)
    print("READY", flush=True)
    libc.read(read_fd, buf, 1)


summary = {"pid": os.getpid(), "version": platform.python_version()}
workers = [threading.Thread(target=f, daemon=True) for f in (waits_on_event, sleeps_in_a_loop, waits_on_a_queue)]
for t in workers:
    t.start()
main_line = sys._getframe().f_lineno + 4
record(me(main_line))
holder = threading.Thread(target=holds_the_gil, daemon=True)
holder.start()
holder.join()
