# SPDX-License-Identifier: Apache-2.0
"""Run inside gdb on a core: walks CPython's interpreters and thread states through the DWARF
of the libpython (or python executable) gdb loaded, with no help from pytstates, and prints
GDB-CPYTHON {json}: [{interpreter address, id, tstates: [{address, native_thread_id, thread_id,
state, top: name of the innermost frame's code object}]}].

3.11+ (frames are _PyInterpreterFrame: through cframe before 3.13; f_code before 3.13,
f_executable after); `state` is null before 3.13.

A second line GDB-KEYS {json} gives, for each pthread key asked for in the environment variable
PYTSTATES_GDB_KEYS ("key,key,..."), every thread's value in glibc's struct pthread (libc6-dbg's
DWARF), by LWP."""
import json
import os

import gdb


def pointer(value):
    return int(value.cast(gdb.lookup_type("unsigned long")))


def code_name(frame):
    """A frame's co_name through f_executable: a PyObject* (3.13) or a tagged _PyStackRef
    (3.14+); the name is a compact ASCII str."""
    executable = frame["f_executable"]
    fields = [f.name for f in executable.type.strip_typedefs().fields()] if executable.type.strip_typedefs().code == gdb.TYPE_CODE_STRUCT else []
    raw = int(executable["bits"]) & ~3 if "bits" in fields else pointer(executable)
    code = gdb.Value(raw).cast(gdb.lookup_type("PyCodeObject").pointer())
    name = code["co_name"].cast(gdb.lookup_type("PyASCIIObject").pointer())
    length = int(name["length"])
    data = int(name.cast(gdb.lookup_type("unsigned long"))) + gdb.lookup_type("PyASCIIObject").sizeof
    return bytes(gdb.selected_inferior().read_memory(data, length)).decode()


def innermost_code(ts):
    try:
        frame = ts["current_frame"]
    except gdb.error:
        frame = ts["cframe"]["current_frame"]
    # Frames owned by C (entry frames, 3.12+) are not Python's: the innermost Python one.
    while pointer(frame) and int(frame["owner"]) >= 3:
        frame = frame["previous"]
    if not pointer(frame):
        return None
    try:
        code = frame["f_code"]
    except gdb.error:
        return code_name(frame)
    return ascii_name(code)


def ascii_name(code):
    name = code["co_name"].cast(gdb.lookup_type("PyASCIIObject").pointer())
    length = int(name["length"])
    data = int(name.cast(gdb.lookup_type("unsigned long"))) + gdb.lookup_type("PyASCIIObject").sizeof
    return bytes(gdb.selected_inferior().read_memory(data, length)).decode()


def keys():
    wanted = [int(k) for k in os.environ.get("PYTSTATES_GDB_KEYS", "").split(",") if k]
    if not wanted:
        return
    out = {}
    for thread in gdb.selected_inferior().threads():
        lwp = thread.ptid[1]
        pd = thread.handle()
        pthread = int.from_bytes(bytes(pd), "little")
        slots = gdb.Value(pthread).cast(gdb.lookup_type("struct pthread").pointer())["specific_1stblock"]
        out[str(lwp)] = {str(k): hex(pointer(slots[k]["data"])) for k in wanted}
    print("GDB-KEYS " + json.dumps(out))


def main():
    runtime = gdb.parse_and_eval("&_PyRuntime")
    out = []
    interp = runtime["interpreters"]["head"]
    while pointer(interp):
        tstates = []
        ts = interp["threads"]["head"]
        while pointer(ts):
            try:
                state = int(ts["state"])
            except gdb.error:
                state = None
            tstates.append({"address": hex(pointer(ts)), "native_thread_id": int(ts["native_thread_id"]),
                            "thread_id": hex(int(ts["thread_id"])), "state": state, "top": innermost_code(ts)})
            ts = ts["next"]
        out.append({"address": hex(pointer(interp)), "id": int(interp["id"]), "tstates": tstates})
        interp = interp["next"]
    print("GDB-CPYTHON " + json.dumps(out))
    keys()


main()
