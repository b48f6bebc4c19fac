# SPDX-License-Identifier: Apache-2.0
"""Sourced in gdb: the command `py-dwarf-locals FUNCTION` prints the locals of FUNCTION's Python
frame the way CPython's own `py-locals` (libpython.py) does, "Locals for FUNCTION" and one
`name = value` line each, but found with no help from libpython.py nor pytstates: every thread
state of every interpreter from _PyRuntime (gdb_cpython.py's walk, through the DWARF of the
python gdb loaded), each thread state's Python frames innermost first, the first frame whose
code is named FUNCTION. Its locals: names from the code's co_localsplusnames, values from the
frame's localsplus[i] (cells by their content, as locals() gives them; 3.12+'s hidden
comprehension locals left out). For where libpython.py cannot read a frame: Debian 13's
python3.13 keeps _PyEval_EvalFrameDefault's `frame` in no place its DWARF can name, so py-bt says
"(unable to read python frame information)" and py-locals prints nothing.

Values: None, bools, ints, floats and strs by their repr; anything else <TYPE at remote 0xADDR>,
as libpython writes what it does not show. 3.11+."""
import os
import sys

import gdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_cpython import code_object, interpreters, object_address, pointer, python_frames, thread_states  # noqa: E402

CO_FAST_HIDDEN, CO_FAST_CELL, CO_FAST_FREE = 0x10, 0x40, 0x80  # co_localspluskinds' bits
MAX_DIGITS = 64  # past this an int is shown by its type (no local here is that long)
MAX_CHARS = 1000  # likewise a str


def typed(address, name):
    return gdb.Value(address).cast(gdb.lookup_type(name).pointer())


def read(address, size):
    return bytes(gdb.selected_inferior().read_memory(address, size))


def type_name(address):
    return typed(address, "PyObject")["ob_type"]["tp_name"].string()


def int_value(address):
    """A PyLongObject's value: 3.12+ keeps the digit count and sign in long_value.lv_tag, before
    that ob_size is the signed count. A digit is 30 bits when it is 4 bytes, else 15."""
    obj = typed(address, "PyLongObject")
    fields = [f.name for f in obj.dereference().type.strip_typedefs().fields()]
    if "long_value" in fields:
        tag = int(obj["long_value"]["lv_tag"])
        count, sign = tag >> 3, 1 - (tag & 3)
        digits = obj["long_value"]["ob_digit"]
    else:
        size = int(obj["ob_base"]["ob_size"])
        count, sign = abs(size), (-1 if size < 0 else 1)
        digits = obj["ob_digit"]
    if count > MAX_DIGITS:
        return None
    width = digits.type.strip_typedefs().target().sizeof
    raw = read(int(digits.address.cast(gdb.lookup_type("unsigned long"))), count * width) if count else b""
    shift = 30 if width == 4 else 15
    value = 0
    for i in reversed(range(count)):
        value = (value << shift) | int.from_bytes(raw[i * width:(i + 1) * width], "little")
    return sign * value


def str_value(address):
    """A str's text: compact ASCII data follows PyASCIIObject, other compact data follows
    PyCompactUnicodeObject, a legacy str's is behind data.any; kind is bytes per character."""
    obj = typed(address, "PyASCIIObject")
    length, state = int(obj["length"]), obj["state"]
    if length > MAX_CHARS:
        return None
    kind = int(state["kind"])
    if int(state["compact"]) and int(state["ascii"]):
        data = address + gdb.lookup_type("PyASCIIObject").sizeof
    elif int(state["compact"]):
        data = address + gdb.lookup_type("PyCompactUnicodeObject").sizeof
    else:
        data = pointer(typed(address, "PyUnicodeObject")["data"]["any"])
    return read(data, length * kind).decode({1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind])


def show(address):
    """A value as py-locals writes it; what it cannot shortly show by its type and address."""
    name = type_name(address)
    value = None
    if name == "NoneType":
        return "None"
    if name == "bool":
        return "True" if int_value(address) else "False"
    if name == "int":
        value = int_value(address)
    elif name == "float":
        value = float(typed(address, "PyFloatObject")["ob_fval"])
    elif name == "str":
        value = str_value(address)
    return repr(value) if value is not None else "<%s at remote %#x>" % (name, address)


def tuple_item(tuple_address, i):
    return pointer(typed(tuple_address, "PyTupleObject")["ob_item"][i])


def frame_locals(frame):
    """(name, value as shown) of a frame's set locals, in co_localsplusnames' order."""
    code = code_object(frame)
    count = int(code["co_nlocalsplus"])
    names = pointer(code["co_localsplusnames"])
    kinds = read(pointer(typed(pointer(code["co_localspluskinds"]), "PyBytesObject")["ob_sval"].address), count)
    slots = frame["localsplus"]
    first = int(slots.address.cast(gdb.lookup_type("unsigned long")))
    slot_type = slots.type.strip_typedefs().target()
    out = []
    for i in range(count):
        if kinds[i] & CO_FAST_HIDDEN:
            continue
        address = object_address(gdb.Value(first + i * slot_type.sizeof).cast(slot_type.pointer()).dereference())
        if address and kinds[i] & (CO_FAST_CELL | CO_FAST_FREE) and type_name(address) == "cell":
            address = pointer(typed(address, "PyCellObject")["ob_ref"])
        if not address:  # unset (an unbound local, an empty cell)
            continue
        out.append((str_value(tuple_item(names, i)), show(address)))
    return out


def find(function):
    """(thread state, frame, callee's name or None) of the first Python frame of `function`."""
    for interp in interpreters():
        for ts in thread_states(interp):
            callee = None
            for frame in python_frames(ts):
                name = str_value(pointer(code_object(frame)["co_name"]))
                if name == function:
                    return ts, frame, callee
                callee = name
    return None, None, None


class DwarfLocals(gdb.Command):
    """py-dwarf-locals FUNCTION: the locals of FUNCTION's Python frame through CPython's DWARF."""

    def __init__(self):
        super().__init__("py-dwarf-locals", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        function = arg.strip()
        ts, frame, callee = find(function)
        if frame is None:
            print("No Python frame of %s in any thread state" % function)
            return
        print("Python frame %#x of %s (calls %s) on the thread state %#x of LWP %d, read through CPython's DWARF"
              % (pointer(frame), function, callee or "nothing", pointer(ts), int(ts["native_thread_id"])))
        print("Locals for " + function)
        for name, value in frame_locals(frame):
            print("%s = %s" % (name, value))


DwarfLocals()
