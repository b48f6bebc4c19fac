# SPDX-License-Identifier: Apache-2.0
"""Calls a pybind11 function (seed_module.work, the seed's "torch": it releases and takes back the
GIL) from two Python frames, once per round, for a debugger that breaks inside it. Prints FACTS
(its LWP, this file, the lines of the two calls, the rounds) first; round r calls work(r).
argv[1]: the directory holding seed_module's build."""
import json
import sys
import threading

sys.path.insert(0, sys.argv[1])
import seed_module  # noqa: E402

ROUNDS = 3
CALLS = {}


def inner(round_no):
    CALLS.setdefault("inner", sys._getframe().f_lineno + 1)
    return seed_module.work(round_no)


def outer(round_no):
    CALLS.setdefault("outer", sys._getframe().f_lineno + 1)
    result = inner(round_no)
    return result


outer(-1)  # learns the lines, before any breakpoint is hit in a round the debugger counts
print("FACTS " + json.dumps({"lwp": threading.get_native_id(), "file": __file__ if __file__.startswith("/") else sys.path[1] + "/" + __file__,
                              "inner_line": CALLS["inner"], "outer_line": CALLS["outer"], "rounds": ROUNDS}), flush=True)
for r in range(ROUNDS):
    outer(r)
print("DONE", flush=True)
