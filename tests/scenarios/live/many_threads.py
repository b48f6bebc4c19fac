# SPDX-License-Identifier: Apache-2.0
"""Many Python threads (argv[1], default 220) blocked on an Event, for live-attach tests.
Prints FACTS with every thread's LWP, pthread and tstate, then READY; answers "ping" on stdin
with "pong"; exits 0 on "quit" or end of input."""
import ctypes
import json
import os
import sys
import threading

from pause import pause_until_quit

ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p
count = int(sys.argv[1]) if len(sys.argv) > 1 else 220
release = threading.Event()
lock = threading.Lock()
facts = []
started = threading.Barrier(count + 1)


def me():
    return {"lwp": threading.get_native_id(), "pthread": hex(threading.get_ident()),
            "tstate": hex(ctypes.pythonapi.PyThreadState_Get())}


def worker():
    with lock:
        facts.append(me())
    started.wait()
    release.wait()


threads = [threading.Thread(target=worker, daemon=True) for _ in range(count)]
for t in threads:
    t.start()
started.wait()
facts.append(me())
print("FACTS " + json.dumps({"pid": os.getpid(), "threads": facts}), flush=True)
print("READY", flush=True)
pause_until_quit()
release.set()
