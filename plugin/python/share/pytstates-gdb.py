# SPDX-License-Identifier: Apache-2.0
# Kept for scripts written before share/pytstates/gdb/pytstates.py (README's coredumpctl line):
#   (gdb) source PREFIX/share/pytstates/pytstates-gdb.py
import os

_pytstates_entry = os.path.join(os.path.dirname(os.path.abspath(os.path.realpath(__file__))), "gdb", "pytstates.py")
with open(_pytstates_entry) as _pytstates_file:
    exec(compile(_pytstates_file.read(), _pytstates_entry, "exec"), {"__file__": _pytstates_entry, "__name__": "pytstates_entry"})
del _pytstates_entry, _pytstates_file
