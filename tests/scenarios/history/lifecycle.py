# SPDX-License-Identifier: Apache-2.0
"""Thread states made, used and deleted by CPython's own threading, for recording under a debugger
(run by the interpreter under test, 3.8 on).

A thread that ends (its thread state created by the main thread, deleted by itself as it ends) and
a thread that stays parked. Prints `FACTS {json}` (each thread's LWP and thread state, the main
thread's LWP, whether the GIL is disabled) and `READY`, then blocks reading stdin with the GIL released.
"""
import ctypes
import json
import os
import platform
import sys
import threading

api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
facts = {"pid": os.getpid(), "version": platform.python_version(), "main_lwp": threading.get_native_id(), "threads": [],
         "free_threaded": not getattr(sys, "_is_gil_enabled", lambda: True)()}
noted = threading.Condition()


def note(ended):
    with noted:
        facts["threads"].append({"lwp": threading.get_native_id(), "tstate": "0x%x" % api.PyThreadState_Get(), "ended": ended})
        noted.notify_all()


stay = threading.Event()


def parked():
    note(False)
    stay.wait()


ending = threading.Thread(target=note, args=(True,))
ending.start()
ending.join()
threading.Thread(target=parked, daemon=True).start()
with noted:
    while len(facts["threads"]) < 2:
        noted.wait(1)
print("FACTS " + json.dumps(facts), flush=True)
print("READY", flush=True)
sys.stdin.read()
