# SPDX-License-Identifier: Apache-2.0
"""Threads that wait and one that spins, for free-threaded and newer CPythons (run by the
interpreter under test): `waits_on_an_event` in threading.Event.wait(), `sleeps` in time.sleep(),
`spins` in a pure-Python loop that never blocks (attached the whole time on a free-threaded build,
fighting for the GIL on others). The main thread prints FACTS (every thread's LWP, pthread_t and
PyThreadState) and READY, then blocks reading stdin."""
import ctypes
import json
import sys
import threading
import time

api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
started = threading.Barrier(4)
facts = {"version": sys.version.split()[0], "threads": []}
lock = threading.Lock()
event = threading.Event()


def me(function):
    with lock:
        facts["threads"].append({"name": threading.current_thread().name, "lwp": threading.get_native_id(),
                                 "pthread": "0x%x" % threading.get_ident(),
                                 "tstate": "0x%x" % api.PyThreadState_Get(), "function": function})


def waits_on_an_event():
    me("wait")  # threading.Event.wait's own frame is innermost
    started.wait()
    event.wait()


def sleeps():
    me("sleeps")
    started.wait()
    while True:
        time.sleep(100)


def spins():
    me("spins")
    started.wait()
    n = 0
    while True:
        n += 1


for target in (waits_on_an_event, sleeps, spins):
    threading.Thread(target=target, name=target.__name__, daemon=True).start()
started.wait()
time.sleep(0.5)  # every thread in its loop
facts["main"] = {"lwp": threading.get_native_id(), "tstate": "0x%x" % api.PyThreadState_Get()}
print("FACTS " + json.dumps(facts), flush=True)
print("READY", flush=True)
sys.stdin.readline()
