# SPDX-License-Identifier: Apache-2.0
"""The binding scenarios, run by the Python under test with the modules built for it in argv[1]:
  mixed       pybind11 2.10.3 (where it builds), 2.13.6 and 3.1.x and nanobind 2.x modules, all
              imported on the main thread; each parks a worker thread inside its own
              gil_scoped_acquire, so each pybind11 key holds its worker's thread state
  stale       pybind11 3.1's gil_scoped_acquire on a worker imports the 2.13 module there first:
              2.13's internals are created on that thread and its key caches the thread state
              that 3.1 deletes when the acquire ends (the seed's failure across releases)
  subinterp   pybind11 3.1's py::subinterpreter with a worker parked inside it, and a second one
              created and left idle (3.12+)
Prints FACTS (what each module knows about its own record and worker) and READY, then pauses."""
import json
import os
import sys
import threading

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "live"))
mode = sys.argv[2]

import pause  # noqa: E402

facts = {"pid": os.getpid(), "main_lwp": threading.get_native_id(), "python": sys.version.split()[0], "modules": {}}


def describe(name):
    mod = __import__(name)
    info = {"id": mod.internals_id, "version": mod.version, "key": mod.internals_key(),
            "internals": mod.internals_address(), "path": os.path.realpath(mod.__file__)}
    if hasattr(mod, "module_local_id"):
        info["module_local"] = mod.module_local_id()
    facts["modules"][name] = info
    return mod


if mode == "mixed":
    for name in ("pb210", "pb213", "pb31"):
        try:
            mod = describe(name)
        except ImportError as e:  # 2.10.3 does not build for every Python
            facts["modules"][name] = {"missing": str(e)}
            continue
        facts["modules"][name]["worker"] = mod.park()
    try:
        import nbm
    except ImportError:  # built only for some Pythons
        nbm = None
    if nbm:
        facts["nanobind"] = {"abi_tag": nbm.abi_tag, "path": os.path.realpath(nbm.__file__), "worker": nbm.park()}
elif mode == "stale":
    pb31 = describe("pb31")
    facts["stale"] = pb31.run_stale("pb213")
    describe("pb213")
elif mode == "subinterp":
    pb31 = describe("pb31")
    facts["sub"] = pb31.subinterp()
    facts["idle"] = pb31.idle_subinterp()
else:
    raise SystemExit("unknown mode " + mode)

print("FACTS " + json.dumps(facts), flush=True)
print("READY", flush=True)
pause.pause_until_quit()
# The parked threads never leave their modules' scopes: skip finalization, which would wait for
# them (and, with sub-interpreters still alive, refuse to finish).
sys.stdout.flush()
os._exit(0)
