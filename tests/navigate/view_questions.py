# SPDX-License-Identifier: Apache-2.0
"""Sourced into gdb (navigate_test.py's view-api case): asks the engine's view every question
through the front end's own view() and prints each answer (or its one-line error) as
VIEW <name> <json>."""
import json

import gdb

from pytstates import gdb_nav


def show(name, question):
    status, answer, error = gdb_nav.view().ask(question if isinstance(question, str) else json.dumps(question))
    gdb.write("VIEW %s %s\n" % (name, answer if status == 0 else json.dumps({"error": error})))
    return json.loads(answer) if status == 0 else None


from pytstates.core import core  # noqa: E402

gdb.write("VIEW binding %s\n" % json.dumps({"binding": core.binding}))
lwp = gdb.selected_thread().ptid[1]
stack = show("stack", {"ask": "stack", "lwp": lwp})
show("interpreter", {"ask": "interpreter", "address": stack["interpreter"]})
show("gil-holder", {"ask": "gil-holder"})
locals_ = show("locals", {"ask": "locals", "lwp": lwp, "frame": 1})
for local in locals_["locals"]:
    show("object-" + local["name"], {"ask": "object", "address": "0x%x" % local["address"]})
show("tstate", {"ask": "tstate", "address": stack["tstate"]})
show("find-name", {"ask": "find-thread", "target": "crasher"})
show("find-tstate", {"ask": "find-thread", "target": str(stack["tstate"])})
show("frame", {"ask": "frame", "lwp": lwp, "frame": 2})
show("bad-json", "{not json")
show("unknown", {"ask": "nonsense"})
show("no-frame", {"ask": "locals", "lwp": lwp, "frame": 99})
show("no-lwp", {"ask": "stack", "lwp": 1})
show("not-object", {"ask": "object", "address": 8})
