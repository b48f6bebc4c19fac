# SPDX-License-Identifier: Apache-2.0
"""The C frames CPython's libpython.py counts as Python frames of their own (its
is_other_python_frame: waiting for the GIL, collecting garbage, a C function called from Python),
by the names it matches. libpython.py's py-up from such a frame, or from a C frame below one,
stops there and then at the eval frame that made the call; pyt, which selects Python frames only,
takes the eval frame's innermost Python frame as the first step up (gdb_nav, lldb_nav; the lldb-14
plugin's plugin/lldb/python_frames.cpp keeps the same list)."""

_NAMES = ("take_gil", "collect", "gc_collect_main", "gc_collect_full", "gc_collect_young", "gc_collect_increment",
          "cfunction_call", "wrapper_call")


def is_other_python_frame(name):
    return bool(name) and (name in _NAMES or name.startswith("cfunction_vectorcall_"))
