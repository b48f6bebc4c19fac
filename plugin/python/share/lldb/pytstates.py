# SPDX-License-Identifier: Apache-2.0
# pytstates' lldb commands (py-tstates, pybind-internals, py-tstates-check, py-tstates-record) for
# an lldb whose Python works (Debian 13's lldb-19):
#   (lldb) command script import PREFIX/share/pytstates/lldb/pytstates.py
# lldb imports this file as the module "pytstates", the name the package has too: the package
# (PREFIX/lib/pytstates/python/pytstates) is loaded here under another name, _pytstates_package,
# and its commands are reached through this module's names (ENTRY_POINTS).
import importlib
import importlib.util
import os
import sys

_PACKAGE = "_pytstates_package"


def _pytstates_frontend():
    here = os.path.dirname(os.path.abspath(os.path.realpath(__file__)))
    package_dir = os.path.normpath(os.path.join(here, "..", "..", "..", "lib", "pytstates", "python", "pytstates"))
    if _PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(_PACKAGE, os.path.join(package_dir, "__init__.py"),
                                                      submodule_search_locations=[package_dir])
        if spec is None:
            raise ImportError("no pytstates package in %s" % package_dir)
        package = importlib.util.module_from_spec(spec)
        sys.modules[_PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(_PACKAGE + ".lldb")


_write_bytecode = sys.dont_write_bytecode
sys.dont_write_bytecode = True  # nothing written beside an installed package
try:
    _frontend = _pytstates_frontend()
    _load_error = None
    for _name in _frontend.ENTRY_POINTS:
        globals()[_name] = getattr(_frontend, _name)
except Exception as e:  # one line at import, never a traceback
    _frontend = None
    _load_error = "%s" % e
finally:
    sys.dont_write_bytecode = _write_bytecode


def __lldb_init_module(debugger, internal_dict):
    if _frontend is None:
        print("pytstates: the lldb commands are not loaded: %s" % _load_error)
        return
    _frontend.register(debugger, __name__)
