# SPDX-License-Identifier: Apache-2.0
"""The loader every front end imports (`from .core import core`): the pybind11 module
_pytstates_core built for this Python when one matches (one file per CPython minor lies here side
by side; Python's import picks the one whose ABI tag is this interpreter's), else the same
functions over libpytstates.so.0 through ctypes (_ctypes_core). PYTSTATES_CORE=ctypes forces
ctypes, PYTSTATES_CORE=pybind11 refuses it (tests).

core is None when neither loads; error then says why, in one line.
Python >= 3.6 syntax only.
"""
import os

core = None
error = None


def _load():
    wanted = os.environ.get("PYTSTATES_CORE", "")
    why = []
    if wanted != "ctypes":
        try:
            from . import _pytstates_core as module
            return module, None
        except ImportError as e:
            why.append("no pytstates module for this Python (%s)" % e)
    if wanted != "pybind11":
        try:
            from . import _ctypes_core as module
            return module, None
        except (OSError, ImportError, AttributeError) as e:
            why.append("cannot load libpytstates.so.0 through ctypes (%s)" % e)
    return None, "; ".join(why) or "PYTSTATES_CORE=%s: no such binding" % wanted


core, error = _load()
