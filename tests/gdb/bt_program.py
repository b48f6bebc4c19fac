# SPDX-License-Identifier: Apache-2.0
"""The program gdb's bt is held against: a thread named "pyt-worker" blocked three Python calls
deep, and the main thread calling time.sleep from first_stop() and then from second_stop(), each
after printing its own stack as FACTS (function, file, line; innermost first, the line being the
sleep's). Under gdb: `break time_sleep` stops at each sleep. As a scenario (argv[1] == "pause"):
READY after the first FACTS, then it sleeps until killed.

FACTS {"stop": N, "lwp": main's LWP, "worker_lwp": ..., "worker_name": ..., "stack": [[function, file, line], ...],
       "worker_stack": [...]}
"""
import json
import os
import sys
import threading
import time

started = threading.Event()
release = threading.Event()


def worker_inner():
    started.set()
    release.wait()


def worker_middle():
    worker_inner()


def worker_outer():
    worker_middle()


# A thread whose names a terminal would obey if printed raw: ESC and a right-to-left override in
# its thread name, BEL in its function's name, a byte that is not UTF-8 in its file's name.
ODD_SOURCE = "def odd_runner():\n    started_odd.set()\n    release.wait()\n"
started_odd = threading.Event()
_odd = {"started_odd": started_odd, "release": release}
# The file need not exist (no line is read from it): a name beside this program, not a machine path.
ODD_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "caf\udce9.py")
exec(compile(ODD_SOURCE, ODD_FILE, "exec"), _odd)
odd_runner = _odd["odd_runner"]
odd_runner.__code__ = odd_runner.__code__.replace(
    co_name="odd\x07runner", **({"co_qualname": "odd\x07runner"} if sys.version_info >= (3, 11) else {}))
ODD_THREAD_NAME = "odd\x1b[31m\u202ename"


def stack_of(frame, line=None):
    rows = []
    while frame is not None:
        code = frame.f_code
        rows.append([code.co_name, code.co_filename, frame.f_lineno])
        frame = frame.f_back
    if line is not None:
        rows[0][2] = line
    return rows


def facts(stop, worker, then=None):
    odd = [t for t in threading.enumerate() if t.name == ODD_THREAD_NAME][0]
    me = sys._getframe(1)
    print("FACTS " + json.dumps({
        "stop": stop, "pid": os.getpid(), "lwp": threading.get_native_id(), "worker_lwp": worker.native_id,
        "worker_name": worker.name, "odd_lwp": odd.native_id,
        "odd_file_escaped": os.path.dirname(ODD_FILE) + "/caf\\xe9.py",
        "stack": stack_of(me, me.f_lineno + 1),  # the caller's next line: its time.sleep
        "worker_stack": stack_of(sys._current_frames()[worker.ident])}), flush=True)
    if then:
        print(then, flush=True)


def first_stop(worker):
    facts(1, worker)
    time.sleep(0)


def second_stop(worker):
    facts(2, worker)
    time.sleep(0)


def paused(worker):
    facts(1, worker, "READY")
    time.sleep(3600)  # killed long before


def main():
    worker = threading.Thread(target=worker_outer, name="pyt-worker", daemon=True)
    worker.start()
    threading.Thread(target=odd_runner, name=ODD_THREAD_NAME, daemon=True).start()
    started.wait()
    started_odd.wait()
    threading.Event().wait(0.05)  # the worker is inside release.wait(), in the kernel (no time.sleep: gdb stops there)
    if sys.argv[1:] == ["pause"]:
        while True:
            paused(worker)
    first_stop(worker)
    second_stop(worker)
    release.set()
    worker.join()


main()
