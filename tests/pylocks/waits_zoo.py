# SPDX-License-Identifier: Apache-2.0
"""Eight threads in Python's own waits: an ABBA pair on two threading.Lock taken in `with` blocks,
time.sleep, Condition.wait, Event.wait, Queue.get, Thread.join (of the sleeper), and a Semaphore
with no permits. Prints FACTS (each role's native id, id() of what it waits on) and READY."""
import json
import os
import queue
import sys
import threading
import time

lock_a, lock_b = threading.Lock(), threading.Lock()
cond = threading.Condition(threading.Lock())
ready = threading.Event()
jobs = queue.Queue()
permits = threading.Semaphore(0)
started = threading.Barrier(9)
lwps = {}


def role(name):
    lwps[name] = threading.get_native_id()


def abba(name, first, second):
    role(name)
    with first:
        started.wait()
        with second:
            pass


def sleeper():
    role("sleep")
    started.wait()
    time.sleep(3600)


def condition_waiter():
    role("condition")
    with cond:
        started.wait()
        cond.wait()


def event_waiter():
    role("event")
    started.wait()
    ready.wait()


def queue_waiter():
    role("queue")
    started.wait()
    jobs.get()


def joiner(sleeping):
    role("join")
    started.wait()
    sleeping.join()


def semaphore_waiter():
    role("semaphore")
    started.wait()
    permits.acquire()


sleeping = threading.Thread(target=sleeper, name="sleeper", daemon=True)
threads = [threading.Thread(target=abba, args=("t1", lock_a, lock_b), name="abba-1", daemon=True),
           threading.Thread(target=abba, args=("t2", lock_b, lock_a), name="abba-2", daemon=True), sleeping,
           threading.Thread(target=condition_waiter, name="cond", daemon=True),
           threading.Thread(target=event_waiter, name="event", daemon=True),
           threading.Thread(target=queue_waiter, name="queue", daemon=True),
           threading.Thread(target=joiner, args=(sleeping,), name="joiner", daemon=True),
           threading.Thread(target=semaphore_waiter, name="semaphore", daemon=True)]
for t in threads:
    t.start()
started.wait()
print("FACTS " + json.dumps({"pid": os.getpid(), "main_lwp": threading.get_native_id(), "lwps": lwps,
                             "objects": {"a": hex(id(lock_a)), "b": hex(id(lock_b)), "condition": hex(id(cond)),
                                         "event": hex(id(ready)), "queue": hex(id(jobs)), "semaphore": hex(id(permits)),
                                         "join": hex(id(sleeping))},
                             "version": "%d.%d" % sys.version_info[:2]}))
print("READY", flush=True)
sys.stdin.readline()
