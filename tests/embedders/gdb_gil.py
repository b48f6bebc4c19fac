# SPDX-License-Identifier: Apache-2.0
"""Run inside gdb on a core: who holds CPython's GIL, read through libpython's DWARF with no help
from pytstates, and every thread's PyGILState slot. Prints GDB-GIL {json}:
  locked        the GIL's locked flag
  last_holder   ceval.gil.last_holder: the state take_gil() was last handed, which a
                PyThreadState_Swap() made while the GIL is held leaves behind
  current       <= 3.11: gilstate.tstate_current, the state the holding thread runs now;
                3.12+: {lwp: _Py_tss_tstate} of every thread
  slots         {lwp: the thread's value for PyGILState's key (autoTSSkey), from glibc's struct
                pthread (libc6-dbg)}
Main interpreter's GIL only (interpreters made by Py_NewInterpreter share it)."""
import json

import gdb


def pointer(value):
    return int(value.cast(gdb.lookup_type("unsigned long")))


def atomic(value):
    return pointer(value["_value"]) if value.type.strip_typedefs().code == gdb.TYPE_CODE_STRUCT else pointer(value)


def main():
    runtime = gdb.parse_and_eval("_PyRuntime")
    out = {}
    try:
        gil = runtime["ceval"]["gil"]  # <= 3.11
        out["current"] = hex(atomic(runtime["gilstate"]["tstate_current"]))
        key = runtime["gilstate"]["autoTSSkey"]
    except gdb.error:
        gil = runtime["interpreters"]["main"]["ceval"]["gil"].dereference()
        key = runtime["autoTSSkey"]
        out["current"] = {}
    out["locked"] = atomic(gil["locked"])
    out["last_holder"] = hex(atomic(gil["last_holder"]))
    key = int(key["_key"])
    out["autotss_key"] = key
    slots = {}
    for thread in gdb.selected_inferior().threads():
        lwp = thread.ptid[1]
        pd = int.from_bytes(bytes(thread.handle()), "little")
        block = gdb.Value(pd).cast(gdb.lookup_type("struct pthread").pointer())["specific_1stblock"]
        slots[str(lwp)] = hex(pointer(block[key]["data"])) if key < 32 else None
        if isinstance(out["current"], dict):
            thread.switch()
            out["current"][str(lwp)] = hex(pointer(gdb.parse_and_eval("_Py_tss_tstate")))
    out["slots"] = slots
    print("GDB-GIL " + json.dumps(out))


main()
