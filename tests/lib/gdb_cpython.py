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


def code_object(frame):
    """A frame's PyCodeObject*: f_code before 3.13; f_executable after, a PyObject* (3.13) or a
    tagged _PyStackRef (3.14+)."""
    try:
        return frame["f_code"]
    except gdb.error:
        pass
    return gdb.Value(object_address(frame["f_executable"])).cast(gdb.lookup_type("PyCodeObject").pointer())


def object_address(ref):
    """The object a PyObject* or a _PyStackRef (3.14+: a union of tagged bits) points to."""
    kind = ref.type.strip_typedefs()
    if kind.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION) and "bits" in [f.name for f in kind.fields()]:
        return int(ref["bits"]) & ~3
    return pointer(ref)


def python_frames(ts):
    """A thread state's Python frames (_PyInterpreterFrame*), innermost first."""
    try:
        frame = ts["current_frame"]
    except gdb.error:
        frame = ts["cframe"]["current_frame"]
    while pointer(frame):
        # Frames owned by C (entry frames, 3.12+) are not Python's.
        if int(frame["owner"]) < 3:
            yield frame
        frame = frame["previous"]


def innermost_code(ts):
    for frame in python_frames(ts):
        return ascii_name(code_object(frame))
    return None


def ascii_name(code):
    """A code object's co_name: a compact ASCII str."""
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


def interpreters():
    """Every interpreter of _PyRuntime, first to last."""
    interp = gdb.parse_and_eval("&_PyRuntime")["interpreters"]["head"]
    while pointer(interp):
        yield interp
        interp = interp["next"]


def thread_states(interp):
    """Every thread state of an interpreter."""
    ts = interp["threads"]["head"]
    while pointer(ts):
        yield ts
        ts = ts["next"]


def main():
    out = []
    for interp in interpreters():
        tstates = []
        for ts in thread_states(interp):
            try:
                state = int(ts["state"])
            except gdb.error:
                state = None
            tstates.append({"address": hex(pointer(ts)), "native_thread_id": int(ts["native_thread_id"]),
                            "thread_id": hex(int(ts["thread_id"])), "state": state, "top": innermost_code(ts)})
        out.append({"address": hex(pointer(interp)), "id": int(interp["id"]), "tstates": tstates})
    print("GDB-CPYTHON " + json.dumps(out))
    keys()


if __name__ == "__main__":  # sourced by gdb; imported by gdb_frame_locals.py for its walk
    main()
