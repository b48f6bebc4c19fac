# SPDX-License-Identifier: Apache-2.0
# Loads pytstates into gdb from an installed tree that gdb does not load by itself (a prefix other
# than /usr): (gdb) source PREFIX/share/pytstates/pytstates-gdb.py
# The package lives in PREFIX/lib/pytstates/python.
import os
import sys

_python_dir = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib", "pytstates", "python"))
if os.path.isdir(_python_dir) and _python_dir not in sys.path:
    sys.path.insert(0, _python_dir)
import pytstates.gdb  # noqa: E402,F401
