# SPDX-License-Identifier: Apache-2.0
"""One WSGI application, mounted three times (/alpha, /beta, /gamma) by uWSGI and mod_wsgi, each
mount in its own interpreter unless the server shares one. ?do=park parks the request in
park_in_MOUNT, ?do=spin keeps it busy in spin_in_MOUNT, ?do=hold&s=S sleeps S seconds,
?do=hold&n=N&s=S answers once N requests to this mount hold at once (so on N threads: a server of
N request threads has then served this mount on each, whichever thread it gave each request; 503
after S seconds), anything else answers at once. Every answer is the JSON fact of the thread
that served it; park and spin also record it in state/ before they wait."""
import json
import os
import sys
import threading
import time

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


def spin_in_alpha(mount):
    truth.record(STATE, "spin_in_alpha", mount=mount)
    truth.spin(STATE)


def spin_in_beta(mount):
    truth.record(STATE, "spin_in_beta", mount=mount)
    truth.spin(STATE)


def spin_in_gamma(mount):
    truth.record(STATE, "spin_in_gamma", mount=mount)
    truth.spin(STATE)


_barriers = {}  # N: the threading.Barrier of ?do=hold&n=N, in this mount's interpreter
_barriers_lock = threading.Lock()


def hold_together(n, seconds):
    """True once n requests of this interpreter wait here at once; False after `seconds`."""
    with _barriers_lock:
        barrier = _barriers.get(n)
        if barrier is None or barrier.broken:
            barrier = _barriers[n] = threading.Barrier(n)
    try:
        barrier.wait(seconds)
        return True
    except threading.BrokenBarrierError:
        return False


def application(environ, start_response):
    mount = environ.get("SCRIPT_NAME", "").strip("/") or "alpha"
    query = dict(p.split("=", 1) for p in environ.get("QUERY_STRING", "").split("&") if "=" in p)
    action = query.get("do")
    if action in ("park", "spin"):
        globals()["%s_in_%s" % (action, mount)](mount)
    status = "200 OK"
    if action == "hold" and "n" in query:
        if not hold_together(int(query["n"]), float(query.get("s", "60"))):
            status = "503 Service Unavailable"  # fewer than n requests held here at once
    elif action == "hold":
        time.sleep(float(query.get("s", "0.2")))
    body = json.dumps({"mount": mount, "native_id": threading.get_native_id(), "pid": os.getpid(),
                       "interp": truth.interpreter_id()}).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
