# SPDX-License-Identifier: Apache-2.0
"""Greenlets switch a thread's Python stack in and out of its thread state (seed 004): one
greenlet is parked inside a switch, another runs and blocks in read() of stdin holding the GIL. The
thread state shows the running greenlet's frames only. Prints FACTS and READY; a line on stdin ends it
("pong")."""
import ctypes
import json
import os
import sys
import threading

import greenlet

ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p
libc = ctypes.PyDLL(None)
lines = {}


def parked():
    lines["parked"] = sys._getframe().f_lineno + 1
    runner.switch()  # suspended here, off the thread's stack


def running():
    other.switch()
    buf = ctypes.create_string_buffer(1)
    line = sys._getframe().f_lineno + 5  # the line of libc.read below
    print("FACTS " + json.dumps({"pid": os.getpid(), "lwp": threading.get_native_id(),
                                 "tstate": hex(ctypes.pythonapi.PyThreadState_Get()), "running_line": line,
                                 "parked_line": lines["parked"]}), flush=True)
    print("READY", flush=True)
    libc.read(0, buf, 1)  # stdin: the test's "ping" ends the pause
    print("pong", flush=True)
    for rest in sys.stdin:  # the rest of "ping", then "quit"
        if rest.startswith("quit"):
            break


other = greenlet.greenlet(parked)
runner = greenlet.greenlet(running)
runner.switch()
