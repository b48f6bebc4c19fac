# SPDX-License-Identifier: Apache-2.0
"""mod_python's handler for tests/embedders (modpython.conf.in): /alpha, /beta and /gamma, each in
its own PythonInterpreter. ?do=park parks the request in park_in_MOUNT (truth.wait_for_release,
the GIL released), ?do=spin keeps it busy in spin_in_MOUNT (truth.spin_holding: never lets the
GIL go; ?do=arm first, in that interpreter), anything else answers at once. Every answer is the JSON fact of the thread that served
it; park and spin also record it in state/ before they wait."""
import json
import os
import sys
import threading

from mod_python import apache

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import truth  # noqa: E402

STATE = os.path.join(HERE, "state")


def park_here(mount):
    truth.wait_for_release(STATE)


def park_in_alpha(mount):
    truth.record(STATE, "park_in_alpha", mount=mount)
    park_here(mount)


def park_in_beta(mount):
    truth.record(STATE, "park_in_beta", mount=mount)
    park_here(mount)


def park_in_gamma(mount):
    truth.record(STATE, "park_in_gamma", mount=mount)
    park_here(mount)


# Mapped in each interpreter by ?do=arm before the busy request: the busy request makes no system
# call from the moment mod_python hands it the GIL (truth.py: the GIL taken with mod_python's
# main-interpreter state stays taken under the sub-interpreter's).
MAPS = {}


def spin_in_alpha(mount):
    truth.record_mapped(MAPS["fact"], "spin_in_alpha", mount=mount, innermost="spin_holding")
    truth.spin_holding(MAPS["stop"])


def spin_in_beta(mount):
    truth.record_mapped(MAPS["fact"], "spin_in_beta", mount=mount, innermost="spin_holding")
    truth.spin_holding(MAPS["stop"])


def spin_in_gamma(mount):
    truth.record_mapped(MAPS["fact"], "spin_in_gamma", mount=mount, innermost="spin_holding")
    truth.spin_holding(MAPS["stop"])


def handler(req):
    mount = req.uri.strip("/").split("/")[0]
    query = dict(p.split("=", 1) for p in (req.args or "").split("&") if "=" in p)
    action = query.get("do")
    if action == "arm":
        MAPS.update(fact=truth.open_mapped(STATE, "held.fact"), stop=truth.open_mapped(STATE, "stop.flag"))
    elif action in ("park", "spin"):
        globals()["%s_in_%s" % (action, mount)](mount)
    body = json.dumps({"mount": mount, "native_id": threading.get_native_id(), "pid": os.getpid(),
                       "interp": truth.interpreter_id(), "python": list(sys.version_info[:2])})
    req.content_type = "application/json"
    req.write(body)
    return apache.OK
