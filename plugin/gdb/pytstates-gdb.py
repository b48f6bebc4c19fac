# Loads pytstates into gdb from an installed tree: (gdb) source PREFIX/share/pytstates/pytstates-gdb.py
# The package lives in PREFIX/share/gdb/python, which is already on gdb's path when PREFIX is /usr.
import os
import sys

_python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gdb", "python")
if os.path.isdir(_python_dir) and _python_dir not in sys.path:
    sys.path.insert(0, os.path.normpath(_python_dir))
import pytstates.gdb  # noqa: E402,F401
