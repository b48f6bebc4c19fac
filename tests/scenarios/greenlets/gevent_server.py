# SPDX-License-Identifier: Apache-2.0
"""A gevent service with parked greenlets (gevent's Greenlet, a greenlet subclass compiled by Cython).

40 greenlets spawned with gevent.spawn wait in different places: on an Event (waits_for_event),
in gevent.sleep (sleeps), on a Queue (reads_queue, one call deeper), and reading a socket nobody
writes (serves_a_client). One greenlet ran to its end (dead), one was created and never started.
The main greenlet waits on an Event, so the hub (its loop in C, libev) runs.

A reporter greenlet, spawned last, describes every other greenlet after they all parked: id(), its
type's name, state, parent and, for suspended ones, the frames traceback.extract_stack(g.gr_frame)
gives, innermost first. The hub is described as running (it is, once the reporter ends). FACTS and
READY are printed; the reporter ends and the process sits in the hub's epoll_wait.
"""
import gc
import json
import os
import socket
import sys
import threading
import traceback

import gevent
import gevent.event
import gevent.queue
import greenlet

COUNT = 40
event = gevent.event.Event()
queue = gevent.queue.Queue()
left, right = socket.socketpair()


def waits_for_event():
    event.wait()


def sleeps():
    gevent.sleep(100000)


def take(q):
    return q.get()


def reads_queue():
    take(queue)


def serves_a_client():
    from gevent import socket as gsocket
    conn = gsocket.socket(fileno=os.dup(left.fileno()))
    conn.recv(1)


WAITERS = [waits_for_event, sleeps, reads_queue, serves_a_client]


def frames_of(frame):
    return [{"function": f.name, "file": os.path.basename(f.filename), "line": f.lineno}
            for f in reversed(traceback.extract_stack(frame))]


def tp_name(t):
    """The type's tp_name: a class statement's is its bare name (a heap type), a C or Cython type's is dotted."""
    return t.__name__ if t.__flags__ & (1 << 9) else t.__module__ + "." + t.__qualname__


def report(greenlets, dead, unstarted, main):
    hub = gevent.get_hub()
    lwp = threading.get_native_id()
    described = []
    for g in greenlets + [dead, unstarted, main, hub]:
        if g is hub:
            state, frames = "running", []
        elif g.dead:
            state, frames = "dead", []
        elif not g:
            state, frames = "unstarted", []
        else:
            state, frames = "suspended", frames_of(g.gr_frame)
        described.append({"address": "0x%x" % id(g), "lwp": lwp, "state": state, "main": g.parent is None,
                          "parent": "0x%x" % id(g.parent) if g.parent is not None else None,
                          "type": tp_name(type(g)), "frames": frames})
    facts = {"greenlets": described, "threads": {str(lwp): {"name": "MainThread", "count": len(described)}},
             "version": greenlet.__version__, "python": "%d.%d" % sys.version_info[:2],
             "gevent": gevent.__version__,
             "reporter": "0x%x" % id(greenlet.getcurrent())}
    print("FACTS " + json.dumps(facts), flush=True)
    print("READY", flush=True)


main = greenlet.getcurrent()
parked = [gevent.spawn(WAITERS[i % len(WAITERS)]) for i in range(COUNT)]
dead = gevent.spawn(lambda: None)
unstarted = gevent.Greenlet(sleeps)
gevent.sleep(0.2)  # every spawned greenlet runs to its wait; `dead` ends
gc.collect()
gevent.spawn(report, parked, dead, unstarted, main)
event.wait()
