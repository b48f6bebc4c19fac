# SPDX-License-Identifier: Apache-2.0
"""An arm64 python3.11 under qemu's gdb stub (qemu-aarch64 -g PORT): two workers in
threading.Event.wait() and time.sleep(), as threads.py has them. Prints FACTS (every thread's LWP,
pthread_t, PyThreadState_Get(), PyGILState_GetThisThreadState() and the function it blocks in) and
READY, then calls getppid(): the debugger's breakpoint (qemu's user-mode stub does not answer an
interrupt while every guest thread is blocked in a system call). Then reads stdin to its end."""
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
time.sleep(0.5)  # the workers into their waits
print("FACTS " + json.dumps({"pid": os.getpid(), "version": sys.version.split()[0], "threads": threads}), flush=True)
print("READY", flush=True)
os.getppid()
sys.stdin.read()
