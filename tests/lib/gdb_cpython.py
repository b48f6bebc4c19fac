"""Run inside gdb on a core: walks CPython's interpreters and thread states through the DWARF
of the libpython (or python executable) gdb loaded, with no help from pytstates, and prints
GDB-CPYTHON {json}: [{interpreter address, id, tstates: [{address, native_thread_id, thread_id,
state, top: name of the innermost frame's code object}]}].

3.13+ only (PyThreadState.current_frame, _PyInterpreterFrame.f_executable)."""
import json

import gdb


def pointer(value):
    return int(value.cast(gdb.lookup_type("unsigned long")))


def code_name(frame):
    """The innermost frame's co_name: f_executable is a PyObject* (3.13) or a tagged
    _PyStackRef (3.14+); the name is a compact ASCII str."""
    executable = frame["f_executable"]
    fields = [f.name for f in executable.type.strip_typedefs().fields()] if executable.type.strip_typedefs().code == gdb.TYPE_CODE_STRUCT else []
    raw = int(executable["bits"]) & ~3 if "bits" in fields else pointer(executable)
    code = gdb.Value(raw).cast(gdb.lookup_type("PyCodeObject").pointer())
    name = code["co_name"].cast(gdb.lookup_type("PyASCIIObject").pointer())
    length = int(name["length"])
    data = int(name.cast(gdb.lookup_type("unsigned long"))) + gdb.lookup_type("PyASCIIObject").sizeof
    return bytes(gdb.selected_inferior().read_memory(data, length)).decode()


def main():
    runtime = gdb.parse_and_eval("&_PyRuntime")
    out = []
    interp = runtime["interpreters"]["head"]
    while pointer(interp):
        tstates = []
        ts = interp["threads"]["head"]
        while pointer(ts):
            frame = ts["current_frame"]
            # Skip frames owned by C (the interpreter's entry frames) to the innermost Python one.
            while pointer(frame) and int(frame["owner"]) >= 3:
                frame = frame["previous"]
            tstates.append({"address": hex(pointer(ts)), "native_thread_id": int(ts["native_thread_id"]),
                            "thread_id": hex(int(ts["thread_id"])), "state": int(ts["state"]),
                            "top": code_name(frame) if pointer(frame) else None})
            ts = ts["next"]
        out.append({"address": hex(pointer(interp)), "id": int(interp["id"]), "tstates": tstates})
        interp = interp["next"]
    print("GDB-CPYTHON " + json.dumps(out))


main()
