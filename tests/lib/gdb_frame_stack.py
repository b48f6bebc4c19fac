# SPDX-License-Identifier: Apache-2.0
"""Sourced in gdb: the command `py-dwarf-bt` prints the Python frames of gdb's selected thread the
way CPython's own `py-bt` (libpython.py) does, "Traceback (most recent call first):" and one
`  File "FILE", line N, in NAME` line each, innermost first, but found with no help from
libpython.py nor pytstates: the thread state whose native_thread_id is the selected thread's LWP,
among every thread state of every interpreter from _PyRuntime (gdb_cpython.py's walk, through the
DWARF of the python gdb loaded), and its _PyInterpreterFrame chain. For where libpython.py cannot
read the frames: Debian 13's python3.13 keeps _PyEval_EvalFrameDefault's `frame` in no place its
DWARF can name, so py-bt says "(unable to read python frame information)".

The line is libpython.py's: the frame's instruction offset in code units (instr_ptr, 3.13+, or
prev_instr, 3.11-3.12, less co_code_adaptive) looked up in the code's co_linetable, the location
table of 3.11+ (Objects/locations.md), with libpython's parse_location_table. 3.11+."""
import os
import sys

import gdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdb_cpython import code_object, interpreters, pointer, python_frames, thread_states  # noqa: E402
from gdb_frame_locals import read, str_value, typed  # noqa: E402


def bytes_value(address):
    """A bytes object's content: ob_size bytes at ob_sval."""
    obj = typed(address, "PyBytesObject")
    size = int(obj["ob_base"]["ob_size"])
    return read(int(obj["ob_sval"].address.cast(gdb.lookup_type("unsigned long"))), size)


def varint(it):
    """An unsigned varint of the location table: 6 bits a byte, low first, bit 6 says more."""
    b = next(it)
    value, shift = b & 63, 0
    while b & 64:
        b = next(it)
        shift += 6
        value |= (b & 63) << shift
    return value


def signed_varint(it):
    value = varint(it)
    return -(value >> 1) if value & 1 else value >> 1


def location_table(first_line, table):
    """(start, end, line or None) of each entry, offsets in code units (libpython.py's
    parse_location_table): the code in bits 3-6 of an entry's first byte says its form, bits 0-2
    its length less one."""
    line, addr, it = first_line, 0, iter(table)
    for first in it:
        code, end = (first >> 3) & 15, addr + (first & 7) + 1
        if code == 15:  # no location
            yield addr, end, None
            addr = end
            continue
        if code == 14:  # long form: line delta, end line, column, end column
            line += signed_varint(it)
            varint(it), varint(it), varint(it)
        elif code == 13:  # no column
            line += signed_varint(it)
        elif code in (10, 11, 12):  # one line form: the delta is code - 10, two column bytes
            line += code - 10
            next(it), next(it)
        else:  # short form: same line, one column byte
            next(it)
        yield addr, end, line
        addr = end


def frame_line(frame, code):
    """The line a frame runs, as libpython.py's current_line_num (PyCode_Addr2Line)."""
    fields = [f.name for f in frame.dereference().type.strip_typedefs().fields()]
    unit = gdb.lookup_type("_Py_CODEUNIT").pointer()
    instr = frame["instr_ptr" if "instr_ptr" in fields else "prev_instr"].cast(unit)
    lasti = int(instr - code["co_code_adaptive"].address.cast(unit))
    first = int(code["co_firstlineno"])
    if lasti < 0:
        return first
    for start, end, line in location_table(first, bytes_value(pointer(code["co_linetable"]))):
        if start <= lasti < end:
            return line
    return None


def thread_state_of(lwp):
    for interp in interpreters():
        for ts in thread_states(interp):
            if int(ts["native_thread_id"]) == lwp:
                return ts
    return None


class DwarfBacktrace(gdb.Command):
    """py-dwarf-bt: the selected thread's Python frames through CPython's DWARF, as py-bt prints them."""

    def __init__(self):
        super().__init__("py-dwarf-bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        lwp = gdb.selected_thread().ptid[1]
        ts = thread_state_of(lwp)
        if ts is None:
            print("No thread state of LWP %d" % lwp)
            return
        print("Thread state %#x of LWP %d, read through CPython's DWARF" % (pointer(ts), lwp))
        print("Traceback (most recent call first):")
        for frame in python_frames(ts):
            code = code_object(frame)
            print('  File "%s", line %s, in %s' % (str_value(pointer(code["co_filename"])), frame_line(frame, code),
                                                    str_value(pointer(code["co_name"]))))


DwarfBacktrace()
