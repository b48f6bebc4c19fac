# SPDX-License-Identifier: Apache-2.0
"""threading first imported on a thread that is not the process's first (as an embedder's worker
does): Python calls that thread's Thread "MainThread" up to 3.12 (3.13+ gives _MainThread the
first thread's ident). The worker is started by _thread, imports threading, and says what
threading made of it. Prints FACTS, READY, then waits on stdin."""
import _thread
import json
import os
import sys

ready = _thread.allocate_lock()
ready.acquire()
block = _thread.allocate_lock()
block.acquire()
facts = {"pid": os.getpid()}


def worker():
    import threading  # first imported here, not on the process's first thread
    main = threading.main_thread()
    facts.update(worker_lwp=threading.get_native_id(), worker_name=threading.current_thread().name,
                 main_ident_is_worker=main.ident == threading.get_ident(), main_name=main.name)
    ready.release()
    block.acquire()


assert "threading" not in sys.modules, "threading was imported before the worker"
_thread.start_new_thread(worker, ())
ready.acquire()
print("FACTS " + json.dumps(facts), flush=True)
print("READY", flush=True)
for line in sys.stdin:
    if line.startswith("quit"):
        break
