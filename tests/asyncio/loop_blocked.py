# SPDX-License-Identifier: Apache-2.0
"""Event loops blocked and idle, for tests/asyncio/loop_blocked_test.py: each mode prints
`FACTS {json}` (what it knows of itself) and `READY`, then stays.

  ticker   issue 41's loop: a ticker task on asyncio.sleep(0.01), a sleeper on asyncio.sleep(3600), and
           a task that calls time.sleep(3600) on the loop's thread. Its facts, taken just before that
           call (nothing runs on the loop after it): the loop's id() and thread, the ready queue's
           length, every scheduled timer's `_when` (the loop's time() is time.monotonic()), and the
           loop's time() then.
  callback a callback (loop.call_soon, no task) calls time.sleep(3600) on the loop's thread, beside a ticker.
  threads  three threads: the main one in threading.Event().wait(), one running a loop idle in its
           selector (a task on an asyncio.Event), one running the ticker loop above. Its facts: each
           loop's id() and LWP, each thread's LWP and what it blocks in.
"""
import asyncio
import json
import sys
import threading
import time

FACTS = {"python": list(sys.version_info[:2]), "file": sys._getframe().f_code.co_filename, "loops": [], "threads": [],
         "tasks": {}}
LOCK = threading.Lock()

# time.sleep's system call: clock_nanosleep from 3.11 (an absolute deadline on CLOCK_MONOTONIC), select before.
SLEEP_CALL = "clock_nanosleep" if sys.version_info >= (3, 11) else "select"


def announce():
    print("FACTS " + json.dumps(FACTS), flush=True)
    print("READY", flush=True)


def note_thread(name, blocks_in, call=None):
    with LOCK:
        FACTS["threads"].append({"name": name, "lwp": threading.get_native_id(), "blocks_in": blocks_in, "call": call})


async def tick():
    while True:
        await asyncio.sleep(0.01)


async def sleep_long():
    await asyncio.sleep(3600)


async def block(loop_facts, started):
    """Blocks the loop's thread; its facts are the loop's state at the call."""
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, print)  # a timer that falls due while the loop is blocked, whatever the ticker's turn
    loop_facts["ready"] = len(loop._ready)
    loop_facts["timers"] = sorted(h._when for h in loop._scheduled if not h._cancelled)
    loop_facts["time"] = loop.time()
    started.set()
    time.sleep(3600)


async def ticker_main(name, started):
    loop = asyncio.get_running_loop()
    asyncio.current_task().set_name(name + "-main")
    facts = {"name": name, "loop": id(loop), "lwp": threading.get_native_id(), "blocked": True}
    with LOCK:
        FACTS["loops"].append(facts)
    tasks = {"ticker": asyncio.create_task(tick()), "sleeper": asyncio.create_task(sleep_long()),
             "blocker": asyncio.create_task(block(facts, started))}
    for role, task in tasks.items():
        task.set_name(name + "-" + role)
        FACTS["tasks"][task.get_name()] = id(task)
    FACTS["tasks"][name + "-main"] = id(asyncio.current_task())
    facts["blocker"] = id(tasks["blocker"])
    note_thread(threading.current_thread().name, "syscall", SLEEP_CALL)
    await asyncio.gather(*tasks.values())


async def idle_main(name, started):
    loop = asyncio.get_running_loop()
    asyncio.current_task().set_name(name + "-main")
    with LOCK:
        FACTS["loops"].append({"name": name, "loop": id(loop), "lwp": threading.get_native_id(), "blocked": False})
    FACTS["tasks"][name + "-main"] = id(asyncio.current_task())
    event = asyncio.Event()
    waiter = asyncio.create_task(event.wait(), name=name + "-waiter")
    FACTS["tasks"][waiter.get_name()] = id(waiter)
    note_thread(threading.current_thread().name, "asyncio-loop")
    await asyncio.sleep(0.1)
    started.set()
    await waiter


def freeze(loop_facts, started):
    """A callback (no task) that blocks the loop's thread."""
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, print)  # a timer that falls due while the loop is blocked
    loop_facts["ready"] = len(loop._ready)
    loop_facts["timers"] = sorted(h._when for h in loop._scheduled if not h._cancelled)
    started.set()
    time.sleep(3600)


async def callback_main(started):
    loop = asyncio.get_running_loop()
    facts = {"name": "callback", "loop": id(loop), "lwp": threading.get_native_id(), "blocked": True, "blocker": None}
    FACTS["loops"].append(facts)
    FACTS["tasks"]["Task-1"] = id(asyncio.current_task())
    note_thread("MainThread", "syscall", SLEEP_CALL)
    ticker = asyncio.create_task(tick(), name="callback-ticker")
    FACTS["tasks"][ticker.get_name()] = id(ticker)
    await asyncio.sleep(0.2)
    loop.call_soon(freeze, facts, started)
    await ticker


def callback():
    started = threading.Event()
    threading.Thread(target=lambda: (started.wait(60), time.sleep(0.3), announce()), daemon=True).start()
    asyncio.run(callback_main(started))


def ticker():
    started = threading.Event()
    threading.Thread(target=lambda: (started.wait(60), time.sleep(0.3), announce()), daemon=True).start()
    asyncio.run(ticker_main("ticker", started))


def threads():
    starts = []
    for name, main in (("idle", idle_main), ("ticker", ticker_main)):
        started = threading.Event()
        starts.append(started)
        threading.Thread(target=asyncio.run, args=(main(name, started),), name=name + "-thread", daemon=True).start()
    for started in starts:
        started.wait(60)
    time.sleep(0.3)  # the ticker loop's thread gets into time.sleep
    note_thread("MainThread", "event")
    forever = threading.Event()
    FACTS["main_event"] = id(forever)
    announce()
    forever.wait()


def main():
    mode = sys.argv[1]
    if mode == "ticker":
        ticker()
    elif mode == "threads":
        threads()
    elif mode == "callback":
        callback()
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
