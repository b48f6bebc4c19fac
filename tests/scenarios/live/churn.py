# SPDX-License-Identifier: Apache-2.0
"""Threads that start and end all the time (a pool of short-lived workers), for attaching while
the thread list changes. Prints FACTS and READY, then keeps churning; answers "ping" with
"pong"; exits 0 on "quit"."""
import json
import os
import sys
import threading

from pause import pause_until_quit
import time

stop = threading.Event()
made = [0]


def short_lived(n):
    sum(range(n))


def churn():
    while not stop.is_set():
        batch = [threading.Thread(target=short_lived, args=(1000 + i,)) for i in range(8)]
        for t in batch:
            t.start()
        for t in batch:
            t.join()
        made[0] += len(batch)


threading.Thread(target=churn, daemon=True).start()
time.sleep(0.2)
print("FACTS " + json.dumps({"pid": os.getpid(), "main_lwp": threading.get_native_id()}), flush=True)
print("READY", flush=True)
pause_until_quit()
stop.set()
