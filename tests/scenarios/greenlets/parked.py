# SPDX-License-Identifier: Apache-2.0
"""Greenlets parked in known places on several threads (seed 004), for greenlet 2.x and 3.x.

Each of three worker threads makes 50 greenlets (GREENLETS_PER_THREAD) that park by switching back
to the thread's main greenlet from different functions:
  parks_in_alpha        hub.switch() in the greenlet's own function
  parks_in_beta         through one more Python call (inner_beta)
  parks_in_gamma        from inside a loop over a generator
  nests                 starts a child greenlet (its parent is the nesting one) that parks; the
                        nesting greenlet stays suspended in child.switch()
plus one greenlet that ran to its end (dead) and one never started. The main thread runs in a user
greenlet of its own ("runner"), so its main greenlet is suspended and the runner is running. A
fourth thread parks three greenlets and ends: they and its main greenlet stay (referenced), dead
in greenlet's terms, of no living thread (their LWP is given as null).

Every greenlet is described by the program itself: id(), its thread's LWP, state (running,
suspended, dead, unstarted), parent, and for suspended ones its frames, innermost first, from
traceback.extract_stack(g.gr_frame). All of it goes into `FACTS {json}`; then `READY`, and every
thread blocks in C (lock.acquire) with the GIL released.
"""
import json
import os
import sys
import threading
import time
import traceback

import greenlet

THREADS = 3
PER_THREAD = int(os.environ.get("GREENLETS_PER_THREAD", "50"))
# scripts/bench: objects the collector tracks (empty lists), for the speed of walking its lists.
ballast = [[] for _ in range(int(os.environ.get("GREENLET_BALLAST", "0")))]
never_released = threading.Lock()
never_released.acquire()
lock = threading.Lock()
described = threading.Condition(lock)
facts = {"greenlets": [], "threads": {}, "version": greenlet.__version__,
         "python": "%d.%d" % sys.version_info[:2]}


def parks_in_alpha(hub):
    hub.switch()


def inner_beta(hub):
    hub.switch()


def parks_in_beta(hub):
    inner_beta(hub)


def ticks():
    yield 1


def parks_in_gamma(hub):
    for _ in ticks():
        hub.switch()


def nests(hub):
    child = greenlet.greenlet(parks_in_alpha)
    made.append(child)
    child.switch(hub)


PARKERS = [parks_in_alpha, parks_in_beta, parks_in_gamma, nests]
made = []  # nests() adds its child here (one thread at a time makes greenlets: under `lock`)


def frames_of(frame):
    return [{"function": f.name, "file": os.path.basename(f.filename), "line": f.lineno}
            for f in reversed(traceback.extract_stack(frame))]


def state_of(g):
    if g is greenlet.getcurrent():
        return "running"
    if g.dead:
        return "dead"
    if not g:
        return "unstarted"
    return "suspended"


def describe(greenlets):
    lwp = threading.get_native_id()
    for g in greenlets:
        state = state_of(g)
        facts["greenlets"].append({
            "address": "0x%x" % id(g), "lwp": lwp, "state": state, "main": g.parent is None,
            "parent": "0x%x" % id(g.parent) if g.parent is not None else None,
            "frames": frames_of(g.gr_frame) if state == "suspended" else []})
    facts["threads"][str(lwp)] = {"name": threading.current_thread().name, "count": len(greenlets)}


def make_greenlets(count):
    """count greenlets of this thread, parked in turn by each parker, then a dead and an unstarted one."""
    hub = greenlet.getcurrent()
    mine = []
    k = 0
    while len(mine) < count - 2:
        del made[:]
        g = greenlet.greenlet(PARKERS[k % len(PARKERS)])
        k += 1
        g.switch(hub)
        mine.append(g)
        mine.extend(made)
    dead = greenlet.greenlet(lambda: None)
    dead.switch()
    mine += [dead, greenlet.greenlet(parks_in_alpha)]
    return mine


keep = []


def worker():
    with lock:
        mine = make_greenlets(PER_THREAD)
        keep.append(mine)
        describe([greenlet.getcurrent()] + mine)
        described.notify_all()
    never_released.acquire()


def ends():
    hub = greenlet.getcurrent()
    for _ in range(3):
        g = greenlet.greenlet(parks_in_alpha)
        g.switch(hub)
        keep.append(g)
    keep.append(hub)


def runner():
    ended = threading.Thread(target=ends, name="ends")
    ended.start()
    ended.join()
    # greenlet forgets an ended thread's state later, in a pending call this thread runs.
    deadline = time.monotonic() + 30
    while not keep[-1].dead and time.monotonic() < deadline:
        time.sleep(0.01)
    for i, g in enumerate(keep[-4:]):
        # greenlet calls every greenlet of an ended thread dead; asking (g.dead) zeroes its stack
        # state, so it is asked of one user greenlet and of the main greenlet (the last) only: the
        # core holds both forms.
        if i in (0, 3):
            assert g.dead
        facts["greenlets"].append({"address": "0x%x" % id(g), "lwp": None, "state": "dead", "main": g.parent is None,
                                   "parent": "0x%x" % id(g.parent) if g.parent is not None else None, "frames": []})
    workers = [threading.Thread(target=worker, name="worker-%d" % i) for i in range(THREADS)]
    for t in workers:
        t.start()
    with lock:
        described.wait_for(lambda: len(facts["threads"]) == THREADS)
        main = greenlet.getcurrent().parent
        describe([main, greenlet.getcurrent()])
    print("FACTS " + json.dumps(facts), flush=True)
    print("READY", flush=True)
    never_released.acquire()


greenlet.greenlet(runner).switch()
