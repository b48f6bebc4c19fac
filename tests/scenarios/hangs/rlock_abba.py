# SPDX-License-Identifier: Apache-2.0
"""Two Python threads in an ABBA on threading.RLock: T1 holds A and asks for B, T2 holds B and asks
for A. Prints FACTS (both threads' native ids, the locks' addresses) and READY just before."""
import json
import os
import sys
import threading
import time

a, b = threading.RLock(), threading.RLock()
both = threading.Barrier(3)
lwps = {}


def take(name, first, second):
    lwps[name] = threading.get_native_id()
    with first:
        both.wait()
        with second:
            pass


t1 = threading.Thread(target=take, args=("t1", a, b), daemon=True)
t2 = threading.Thread(target=take, args=("t2", b, a), daemon=True)
t1.start()
t2.start()
both.wait()
print("FACTS " + json.dumps({"pid": os.getpid(), "main_lwp": threading.get_native_id(), "t1": lwps["t1"], "t2": lwps["t2"],
                             "a": hex(id(a)), "b": hex(id(b)), "version": "%d.%d" % sys.version_info[:2]}))
print("READY", flush=True)
sys.stdin.readline()
