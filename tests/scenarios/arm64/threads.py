# SPDX-License-Identifier: Apache-2.0
"""An arm64 python3 (3.11, 3.13) under qemu (tests/lib/arm64.py): two workers in threading.Event.wait()
and time.sleep(), the main thread reading stdin. Prints FACTS (every thread's LWP, pthread_t,
PyThreadState_Get() and PyGILState_GetThisThreadState(), and the function it blocks in) and
READY, then aborts on the line "abort", so that qemu writes the guest's core. With the argument
"stub" (under qemu's gdb stub, qemu-aarch64 -g PORT) it calls getppid() after READY instead: the
debugger's breakpoint (qemu's user-mode stub does not answer an interrupt while every guest thread
is blocked in a system call), then reads stdin to its end."""
import ctypes
import json
import os
import sys
import threading
import time

api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
api.PyGILState_GetThisThreadState.restype = ctypes.c_void_p
started = threading.Barrier(3)
lock = threading.Lock()
event = threading.Event()
threads = []


def me(function):
    with lock:
        threads.append({"name": threading.current_thread().name, "lwp": threading.get_native_id(),
                        "pthread": "0x%x" % threading.get_ident(), "tstate": "0x%x" % api.PyThreadState_Get(),
                        "autotss": "0x%x" % (api.PyGILState_GetThisThreadState() or 0), "function": function})


def waits_on_an_event():
    me("wait")
    started.wait()
    event.wait()


def sleeps():
    me("sleeps")
    started.wait()
    while True:
        time.sleep(100)


for target in (waits_on_an_event, sleeps):
    threading.Thread(target=target, name=target.__name__, daemon=True).start()
started.wait()
me("<module>")
time.sleep(0.5)
print("FACTS " + json.dumps({"pid": os.getpid(), "version": sys.version.split()[0], "threads": threads}), flush=True)
print("READY", flush=True)
if sys.argv[1:] == ["stub"]:
    os.getppid()
    sys.stdin.read()
elif sys.stdin.readline().strip() == "abort":
    os.abort()
