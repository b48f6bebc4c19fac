# SPDX-License-Identifier: Apache-2.0
"""A thread that crashes (SIGSEGV) in a C call made from Python: ctypes.string_at(0) reads address
0. Prints FACTS (its LWP, the line of the crashing call in `crasher`, the files of `crasher` and of
ctypes.string_at as their code objects name them) and READY first."""
import ctypes
import json
import sys
import threading


def crasher(depth):
    if depth:
        return crasher(depth - 1)
    files = {"file": sys._getframe().f_code.co_filename, "ctypes_file": ctypes.string_at.__code__.co_filename}
    line = sys._getframe().f_lineno + 3
    print("FACTS " + json.dumps(dict(files, lwp=threading.get_native_id(), line=line)), flush=True)
    print("READY", flush=True)
    ctypes.string_at(0)


t = threading.Thread(target=crasher, args=(2,), name="crasher")
t.start()
t.join()
