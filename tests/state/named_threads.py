# SPDX-License-Identifier: Apache-2.0
"""Threads with names: three threading.Threads (one name not ASCII, one with a control character),
and one thread no threading.Thread runs (started by _thread, the kernel's name set by prctl).
Prints FACTS (each thread's name, threading.get_native_id(), threading.get_ident()), READY, then
waits on stdin."""
import _thread
import ctypes
import json
import os
import sys
import threading

PR_SET_NAME = 15
NAMES = ["worker-\u00e9\u4e16", "bell\x07ctl", "plain"]
RAW_COMM = b"pyts-raw"

libc = ctypes.CDLL(None, use_errno=True)
stop = threading.Event()
started = threading.Barrier(len(NAMES) + 1)
seen = {}


def body():
    seen[threading.current_thread().name] = {"native_id": threading.get_native_id(), "ident": threading.get_ident()}
    started.wait()
    stop.wait()


raw_ready = _thread.allocate_lock()
raw_ready.acquire()
raw_block = _thread.allocate_lock()
raw_block.acquire()
raw = {}


def raw_body():
    # No threading call here: threading.current_thread() would register a _DummyThread.
    libc.prctl(PR_SET_NAME, RAW_COMM, 0, 0, 0)
    raw["native_id"] = _thread.get_native_id()
    raw["ident"] = _thread.get_ident()
    raw_ready.release()
    raw_block.acquire()


threads = [threading.Thread(target=body, name=n, daemon=True) for n in NAMES]
for t in threads:
    t.start()
started.wait()
_thread.start_new_thread(raw_body, ())
raw_ready.acquire()
facts = {"pid": os.getpid(), "version": "%d.%d" % sys.version_info[:2],
         "main": {"name": threading.current_thread().name, "native_id": threading.get_native_id(),
                  "ident": threading.get_ident()},
         "threads": [dict(name=n, **seen[n]) for n in NAMES],
         "raw": dict(comm=RAW_COMM.decode(), **raw)}
print("FACTS " + json.dumps(facts), flush=True)
print("READY", flush=True)
for line in sys.stdin:
    if line.strip() == "ping":
        print("pong", flush=True)
    elif line.strip() == "quit":
        break
