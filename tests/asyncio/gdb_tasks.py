# SPDX-License-Identifier: Apache-2.0
"""Inside gdb (gdb -x gdb_tasks.py, after the core): what gdb reads of each asyncio task named in
PYTSTATES_TASKS (addresses) through _asyncio's DWARF (TaskObj) and CPython's own gdb script
(python3.11-gdb.py: its PyObjectPtr for the name, its PyFramePtr for the coroutine's frame), with no
help from pytstates. Prints one line `GDB-TASKS {json}`."""
import json
import os

import gdb


def main():
    out = {}
    libpython = None
    for name in ("libpython", "__main__"):
        import sys
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "PyFramePtr"):
            libpython = module
    for address in json.loads(os.environ["PYTSTATES_TASKS"]):
        task = gdb.parse_and_eval("(TaskObj*)%s" % address).dereference()
        facts = {"state": int(task["task_state"]), "fut_waiter": "0x%x" % int(task["task_fut_waiter"]),
                 "loop": "0x%x" % int(task["task_loop"])}
        if int(task["task_fut_waiter"]):  # the awaited future's own state (done: the task is ready)
            facts["waiter_state"] = int(gdb.parse_and_eval("((FutureObj*)%d)->fut_state" % int(task["task_fut_waiter"])))
        if libpython is not None:
            name = libpython.PyObjectPtr.from_pyobject_ptr(task["task_name"]).proxyval(set())
            # 3.12+ names a task lazily: the counter, which get_name() shows as "Task-N".
            facts["name"] = "Task-%d" % name if isinstance(name, int) else name
            if isinstance(name, str):  # the script reads at most 1000 characters: the length, by gdb
                facts["name_length"] = int(gdb.parse_and_eval("((PyASCIIObject*)%d)->length" % int(task["task_name"])))
            coro = gdb.parse_and_eval("(PyCoroObject*)%d" % int(task["task_coro"])).dereference()
            if int(coro["cr_frame_state"]) < 1:  # not completed: its frame is there
                frame = libpython.PyFramePtr(gdb.parse_and_eval("(_PyInterpreterFrame*)%d" % int(coro["cr_iframe"].address)))
                facts["coro_function"] = frame.co_name.proxyval(set())
                facts["coro_line"] = frame.current_line_num()
        out[address] = facts
    # Each thread state's innermost Python frame (3.13+: PyThreadState.current_frame), through the
    # build's DWARF and its python-gdb script: where py-bt cannot read a frame (3.14's).
    tops = []
    if libpython is not None:
        try:
            ts = gdb.parse_and_eval("_PyRuntime.interpreters.head.threads.head")
            while int(ts) and len(tops) < 64:
                frame = ts["current_frame"]
                if int(frame):
                    f = libpython.PyFramePtr(frame)
                    tops.append({"function": f.co_name.proxyval(set()), "line": f.current_line_num()})
                ts = ts["next"]
        except gdb.error:
            pass  # before 3.13: no current_frame; py-bt is the oracle there
    out["_tops"] = tops
    print("GDB-TASKS " + json.dumps(out))


main()
