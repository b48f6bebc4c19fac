# SPDX-License-Identifier: Apache-2.0
"""Imports types_a (-fabi-version=2) and types_b (default ABI), built from one source, so the
interpreter holds two pybind11 internals records with three classes each. Prints FACTS, READY,
then waits on stdin ("ping" -> "pong", "quit" ends)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pause import pause_until_quit  # noqa: E402
import types_a  # noqa: E402
import types_b  # noqa: E402

objects = [types_a.Widget(), types_b.Gadget()]
facts = {"pid": os.getpid(), "records": {}}
for mod in (types_a, types_b):
    facts["records"][mod.internals_id] = {
        "module": mod.__file__,
        "types": {"%s.%s" % (mod.__name__, n): cpp for n, cpp in
                  (("Widget", "shop::Widget"), ("Gadget", "shop::Gadget"), ("Bolt", "shop::parts::Bolt"))},
    }
print("FACTS " + json.dumps(facts), flush=True)
print("READY", flush=True)
pause_until_quit()
