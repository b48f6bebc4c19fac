# SPDX-License-Identifier: Apache-2.0
"""A thread waits in a function of this file, which the test copies into a directory deep enough
that the frame's line is wider than 80 columns. Prints FACTS (the file as its code objects name it,
the line the thread waits at, its LWP) and READY, then waits for a line on stdin."""
import json
import sys
import threading

facts = {}
parked = threading.Event()
release = threading.Event()


def park_in_a_deep_file():
    facts.update(file=sys._getframe().f_code.co_filename, line=sys._getframe().f_lineno + 2, lwp=threading.get_native_id())
    parked.set()
    release.wait()


threading.Thread(target=park_in_a_deep_file, name="parked", daemon=True).start()
parked.wait()
print("FACTS " + json.dumps(facts), flush=True)
print("READY", flush=True)
sys.stdin.readline()
