# SPDX-License-Identifier: Apache-2.0
"""Two threads in an ABBA deadlock on two plain threading.Lock: T1 holds A and asks for B, T2 holds
B and asks for A. `with` (argv[1] == "with"): each takes its first lock in a `with` block, the
holding a frame's exception table shows; `attr`: the same with each lock an attribute (self._lock
of two accounts, `with other._lock:` the wait); `acquire`: by lock.acquire(), which nothing records;
`deep`: as `with`, the second lock taken DEPTH frames below the `with` that holds the first (a
holder the default --frames 5 does not show: the finding must not depend on what is shown).
Prints FACTS (native ids, id() of the locks, which thread holds which, the lines) and READY."""
import json
import os
import re
import sys
import threading

mode = sys.argv[1] if len(sys.argv) > 1 else "with"
lock_a, lock_b = threading.Lock(), threading.Lock()
both = threading.Barrier(3)
lwps = {}
LINES = {}


def take_with(name, first, second):
    lwps[name] = threading.get_native_id()
    with first:  # LINE with-first
        both.wait()  # LINE holds
        with second:  # LINE waits
            pass


DEPTH = 7  # frames between the waiting `with` (frame #0) and the holding one


def take_deep(name, first, second):
    lwps[name] = threading.get_native_id()
    with first:  # LINE deep-with
        both.wait()
        down(DEPTH - 1, second)  # LINE deep-holds


def down(n, lock):
    if n:
        down(n - 1, lock)
    else:
        with lock:  # LINE deep-waits
            pass


def take_acquire(name, first, second):
    lwps[name] = threading.get_native_id()
    first.acquire()
    both.wait()
    second.acquire()  # LINE acquire-waits


class Account:
    def __init__(self, lock):
        self._lock = lock

    def transfer(self, name, other):
        lwps[name] = threading.get_native_id()
        with self._lock:  # LINE attr-with
            both.wait()
            with other._lock:  # LINE attr-waits
                pass


def take_attr(name, first, second):
    Account(first).transfer(name, Account(second))


for n, line in enumerate(open(__file__), 1):
    m = re.search(r"# LINE ([a-z-]+)$", line.rstrip())
    if m:
        LINES[m.group(1)] = n

take = {"with": take_with, "attr": take_attr, "acquire": take_acquire, "deep": take_deep}[mode]
t1 = threading.Thread(target=take, args=("t1", lock_a, lock_b), name="abba-1", daemon=True)
t2 = threading.Thread(target=take, args=("t2", lock_b, lock_a), name="abba-2", daemon=True)
t1.start()
t2.start()
both.wait()
print("FACTS " + json.dumps({"pid": os.getpid(), "main_lwp": threading.get_native_id(), "t1": lwps["t1"], "t2": lwps["t2"],
                             "a": hex(id(lock_a)), "b": hex(id(lock_b)), "mode": mode, "lines": LINES,
                             "holds": {"t1": hex(id(lock_a)), "t2": hex(id(lock_b))}, "depth": DEPTH,
                             "version": "%d.%d" % sys.version_info[:2]}))
print("READY", flush=True)
sys.stdin.readline()
