# SPDX-License-Identifier: Apache-2.0
"""Names that are not UTF-8, as production hands them over: this script runs from a directory whose
name holds a Latin-1 byte and a control character (so co_filename holds lone surrogates, Python's
surrogateescape), a worker waits inside a function whose co_name holds a lone surrogate, and the
test starts it through a copy of the interpreter whose path holds such bytes too. Prints FACTS
(the exact bytes, in hex, as surrogateescape gives them back) and READY, then pauses."""
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pause  # noqa: E402

ready = threading.Event()


def waiting_here(event):
    ready.set()
    event.wait()


odd_name = "wait\udce9ing"  # a str no UTF-8 encoder accepts
waiting = type(waiting_here)(waiting_here.__code__.replace(co_name=odd_name), globals())
worker = threading.Thread(target=waiting, args=(threading.Event(),), daemon=True)
worker.start()
ready.wait()


def raw(s):
    return s.encode("utf-8", "surrogateescape").hex()


print("FACTS " + json.dumps({"pid": os.getpid(), "worker_lwp": worker.native_id,
                             "executable": os.fsencode(sys.executable).hex(),
                             "script": raw(waiting_here.__code__.co_filename),
                             "function": raw(odd_name)}), flush=True)
print("READY", flush=True)
pause.pause_until_quit()
