# SPDX-License-Identifier: Apache-2.0
"""A garbage collection that blocks: the main thread's gc.collect() finds a cycle whose __del__
takes a threading.Lock another thread ("holder") holds forever. gcstate->collecting stays 1 while
the main thread waits inside the collection. Prints FACTS and READY just before gc.collect()."""
import gc
import json
import os
import sys
import threading

held = threading.Lock()
holder_ready = threading.Event()


def hold():
    held.acquire()
    holder_ready.set()
    threading.Event().wait()


holder = threading.Thread(target=hold, name="holder", daemon=True)
holder.start()
holder_ready.wait()


class Waiter:
    def __del__(self):
        held.acquire()  # blocks: "holder" has it


gc.disable()
w = Waiter()
w.cycle = w
del w
print("FACTS " + json.dumps({"pid": os.getpid(), "version": "%d.%d" % sys.version_info[:2],
                             "collector": threading.get_native_id(), "holder": holder.native_id,
                             "holder_ident": holder.ident}), flush=True)
print("READY", flush=True)
gc.collect()
