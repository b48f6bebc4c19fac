# SPDX-License-Identifier: Apache-2.0
"""Hangs made by pure Python through ctypes, on any CPython: a ctypes.PyDLL call keeps the GIL while
it blocks (a CDLL call lets it go).

  ctypes_hang.py gil-mutex   A holds the GIL in pthread_mutex_lock(M); B holds M and waits for the GIL
  ctypes_hang.py read        H holds the GIL in read() on a pipe nobody writes; two threads wait for it
  ctypes_hang.py mutex-abba  T1 holds M1 and asks for M2, T2 holds M2 and asks for M1 (no GIL involved:
                             the cycle a free-threaded build has too)

Prints FACTS (gettid of each thread, M's address) and READY just before the last blocking call."""
import ctypes
import json
import os
import sys
import threading
import time

libc_gil = ctypes.PyDLL(None)   # calls keep the GIL
libc_free = ctypes.CDLL(None)   # calls release it
mode = sys.argv[1]
facts = {"pid": os.getpid(), "version": "%d.%d" % sys.version_info[:2]}


def ready():
    print("FACTS " + json.dumps(facts))
    print("READY", flush=True)


if mode == "gil-mutex":
    mutex = ctypes.create_string_buffer(64)  # a zeroed pthread_mutex_t: PTHREAD_MUTEX_INITIALIZER
    locked = threading.Event()

    def b():
        facts["holder_of_mutex"] = threading.get_native_id()
        libc_free.pthread_mutex_lock(mutex)
        locked.set()
        time.sleep(1.0)  # A takes the GIL and blocks on M meanwhile; then B wants the GIL back

    t = threading.Thread(target=b, daemon=True)
    t.start()
    locked.wait()
    facts["holder_of_gil"] = threading.get_native_id()
    facts["mutex"] = hex(ctypes.addressof(mutex))
    ready()
    libc_gil.pthread_mutex_lock(mutex)
elif mode == "mutex-abba":
    m1, m2 = ctypes.create_string_buffer(64), ctypes.create_string_buffer(64)
    both = threading.Barrier(3)

    def take(name, first, second):
        facts[name] = threading.get_native_id()
        libc_free.pthread_mutex_lock(first)
        both.wait()
        libc_free.pthread_mutex_lock(second)

    for args in (("t1", m1, m2), ("t2", m2, m1)):
        threading.Thread(target=take, args=args, daemon=True).start()
    both.wait()
    facts["m1"], facts["m2"] = hex(ctypes.addressof(m1)), hex(ctypes.addressof(m2))
    facts["gil"] = getattr(sys, "_is_gil_enabled", lambda: True)()
    ready()
    sys.stdin.readline()
elif mode == "read":
    r, w = os.pipe()
    lwps = []
    started = threading.Barrier(3)

    def spin():
        lwps.append(threading.get_native_id())
        started.wait()
        n = 0
        while True:
            n += 1

    for _ in range(2):
        threading.Thread(target=spin, daemon=True).start()
    started.wait()
    facts["holder"] = threading.get_native_id()
    facts["waiters"] = lwps
    facts["call"] = "read"
    buf = ctypes.create_string_buffer(1)
    ready()
    libc_gil.read(r, buf, 1)
