# SPDX-License-Identifier: Apache-2.0
# pytstates' gdb commands for any gdb with Python >= 3.6, from wherever pytstates lies (the
# archive unpacked anywhere, a prefix gdb does not load by itself, the build tree):
#   (gdb) source PREFIX/share/pytstates/gdb/pytstates.py
# The package lives in PREFIX/lib/pytstates/python; its loader (pytstates/core.py) picks the
# pybind11 module built for gdb's Python, else drives libpytstates.so.0 through ctypes.
import os
import sys


def _pytstates_load():
    here = os.path.dirname(os.path.abspath(os.path.realpath(__file__)))
    python_dir = os.path.normpath(os.path.join(here, "..", "..", "..", "lib", "pytstates", "python"))
    if not os.path.isdir(python_dir):
        print("pytstates: the gdb commands are not loaded: no %s" % python_dir)
        return
    if python_dir not in sys.path:
        sys.path.insert(0, python_dir)
    write_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # nothing written beside an installed package
    try:
        import pytstates.gdb  # noqa: F401
    except Exception as e:  # one line, never a traceback into gdb
        print("pytstates: the gdb commands are not loaded: %s" % e)
    finally:
        sys.dont_write_bytecode = write_bytecode


_pytstates_load()
del _pytstates_load
