# SPDX-License-Identifier: Apache-2.0
"""asyncio programs that get stuck, for tests/asyncio: each prints `FACTS {json}` (what it knows
about itself: its tasks' id() and names, the loop thread's native id) and `READY`, then stays.

  stuck     a service whose tasks wait forever: a gather of nested tasks, an Event never set,
            Queue.get on an empty queue, a long sleep, a task awaiting a future nobody completes;
            the loop idles in its selector
  lockcycle two tasks deadlocked on two asyncio.Lock (each holds one in `async with`)
  taskcycle two tasks awaiting each other
  blocked   a task calls time.sleep() on the loop's thread while callbacks are ready
  twoloops  two threads, each running its own loop with a stuck task
  eager     3.12+: tasks made by asyncio.eager_task_factory, stuck on an Event (they started running
            inside create_task, before the loop scheduled anything)
  many N    N pending tasks (the bench)
  shapes    the awaited-by shapes CPython 3.14 records: a TaskGroup service (3.11+: workers and
            nested groups), a shielded task, a gather of gathers, asyncio.wait (all and first) and
            wait_for; FACTS["awaited_by"] names each task's awaiters
  gathercycle  A awaits gather(B), B awaits gather(C), C awaits A
  ready     a task whose Event was set while the loop's thread sleeps: its wakeup is queued
  deep      a task named with 10 kB, and a chain of 100 tasks each awaiting the next
"""
import asyncio
import json
import sys
import threading
import time

# file: the path this program's frames name (its code objects' co_filename), which the text shows whole.
FACTS = {"tasks": {}, "loops": [], "python": list(sys.version_info[:2]), "file": sys._getframe().f_code.co_filename}


def announce():
    print("FACTS " + json.dumps(FACTS), flush=True)
    print("READY", flush=True)


def note_task(task):
    FACTS["tasks"][task.get_name()] = id(task)
    return task


def note_loop(name):
    FACTS["loops"].append({"name": name, "loop": id(asyncio.get_running_loop()), "lwp": threading.get_native_id(),
                           "thread": threading.current_thread().name})


# ----------------------------------------------------------------- stuck

async def wait_event(event):
    await event.wait()


async def consume(queue):
    while True:
        item = await queue.get()
        queue.task_done()
        del item


async def sleep_long():
    await asyncio.sleep(3600)


async def grandchild(future):
    await future


async def child(name, future):
    inner = note_task(asyncio.create_task(grandchild(future), name=name + "-inner"))
    await inner


async def parent(future):
    a = note_task(asyncio.create_task(child("child-a", future), name="child-a"))
    b = note_task(asyncio.create_task(sleep_long(), name="child-b"))
    await asyncio.gather(a, b)


async def stuck_main():
    note_loop("main")
    note_task(asyncio.current_task())
    event = asyncio.Event()
    queue = asyncio.Queue()
    future = asyncio.get_running_loop().create_future()
    FACTS["event"], FACTS["queue"], FACTS["future"] = id(event), id(queue), id(future)
    tasks = [note_task(asyncio.create_task(wait_event(event), name="waits-event")),
             note_task(asyncio.create_task(consume(queue), name="consumer")),
             note_task(asyncio.create_task(sleep_long(), name="sleeper")),
             note_task(asyncio.create_task(parent(future), name="parent"))]
    await asyncio.sleep(0.2)
    asyncio.get_running_loop().call_soon(announce)
    await asyncio.gather(*tasks)


# ----------------------------------------------------------------- lockcycle

async def take_both(name, first, second, started):
    async with first:
        started.append(name)
        while len(started) < 2:
            await asyncio.sleep(0)
        async with second:
            pass


async def lockcycle_main():
    note_loop("main")
    note_task(asyncio.current_task())
    lock_a, lock_b = asyncio.Lock(), asyncio.Lock()
    FACTS["locks"] = {"lock_a": id(lock_a), "lock_b": id(lock_b)}
    started = []
    one = note_task(asyncio.create_task(take_both("one", lock_a, lock_b, started), name="takes-a-then-b"))
    two = note_task(asyncio.create_task(take_both("two", lock_b, lock_a, started), name="takes-b-then-a"))
    await asyncio.sleep(0.2)
    asyncio.get_running_loop().call_soon(announce)
    await asyncio.gather(one, two)


# ----------------------------------------------------------------- taskcycle

async def await_other(box):
    await asyncio.sleep(0.05)
    await box["other"]


async def taskcycle_main():
    note_loop("main")
    note_task(asyncio.current_task())
    box_one, box_two = {}, {}
    one = note_task(asyncio.create_task(await_other(box_one), name="awaits-two"))
    two = note_task(asyncio.create_task(await_other(box_two), name="awaits-one"))
    box_one["other"], box_two["other"] = two, one
    await asyncio.sleep(0.2)
    asyncio.get_running_loop().call_soon(announce)
    await asyncio.gather(one, two)


# ----------------------------------------------------------------- blocked

def never_runs():
    pass


async def freezes():
    loop = asyncio.get_running_loop()
    loop.call_soon(never_runs)  # a ready callback the frozen loop cannot run
    announce()
    time.sleep(3600)


async def blocked_main():
    note_loop("main")
    note_task(asyncio.current_task())
    others = [note_task(asyncio.create_task(sleep_long(), name="sleeper-%d" % i)) for i in range(2)]
    await asyncio.sleep(0.1)
    frozen = note_task(asyncio.create_task(freezes(), name="freezer"))
    await asyncio.gather(frozen, *others)


# ----------------------------------------------------------------- twoloops

async def loop_thread_main(name, ready):
    note_loop(name)
    asyncio.current_task().set_name(name + "-main")  # asyncio.run names both Task-1
    note_task(asyncio.current_task())
    event = asyncio.Event()
    waiter = note_task(asyncio.create_task(wait_event(event), name=name + "-waiter"))
    await asyncio.sleep(0.1)
    ready.set()
    await waiter


def twoloops():
    readies = []
    for name in ("loop-one", "loop-two"):
        ready = threading.Event()
        readies.append(ready)
        threading.Thread(target=asyncio.run, args=(loop_thread_main(name, ready),), kwargs={}, name=name + "-thread",
                         daemon=True).start()
    for ready in readies:
        ready.wait(30)
    announce()
    threading.Event().wait()


# ----------------------------------------------------------------- eager

async def eager_main():
    note_loop("main")
    note_task(asyncio.current_task())
    loop = asyncio.get_running_loop()
    loop.set_task_factory(asyncio.eager_task_factory)
    event = asyncio.Event()
    FACTS["event"] = id(event)
    tasks = [note_task(asyncio.create_task(wait_event(event), name="eager-%d" % i)) for i in range(3)]
    loop.set_task_factory(None)
    await asyncio.sleep(0.1)
    loop.call_soon(announce)
    await asyncio.gather(*tasks)


# ----------------------------------------------------------------- many

async def many_main(n):
    note_loop("main")
    event = asyncio.Event()
    tasks = [asyncio.create_task(wait_event(event), name="w%d" % i) for i in range(n)]
    await asyncio.sleep(0.5)
    FACTS["count"] = n
    asyncio.get_running_loop().call_soon(announce)
    await asyncio.gather(*tasks)


# ----------------------------------------------------------------- shapes

def awaited_by(child, *awaiters):
    FACTS.setdefault("awaited_by", {})[child] = sorted(awaiters)


async def worker(kind, event, queue):
    if kind == "event":
        await (event.wait())
    elif kind == "queue":
        await queue.get()
    else:
        await sleep_long()


async def group(name, event, queue):
    async with asyncio.TaskGroup() as tg:
        for i, kind in enumerate(("event", "sleep")):
            note_task(tg.create_task(worker(kind, event, queue), name="%s-w%d" % (name, i)))
            awaited_by("%s-w%d" % (name, i), name)


async def service(event, queue):
    async with asyncio.TaskGroup() as tg:
        for i, kind in enumerate(("event", "queue", "sleep")):
            note_task(tg.create_task(worker(kind, event, queue), name="worker-%d" % i))
            awaited_by("worker-%d" % i, "service")
        for i in range(2):
            note_task(tg.create_task(group("group-%d" % i, event, queue), name="group-%d" % i))
            awaited_by("group-%d" % i, "service")


async def guard(inner):
    await asyncio.shield(inner)


async def gathers(a, b, c):
    await asyncio.gather(asyncio.gather(a, b), c)


async def waits_all(tasks):
    await asyncio.wait(tasks)


async def waits_first(tasks):
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)


async def waits_for(task):
    await asyncio.wait_for(task, 3600)


async def shapes_main():
    note_loop("main")
    note_task(asyncio.current_task())
    event, queue = asyncio.Event(), asyncio.Queue()
    top = []

    def start(coro, name):
        top.append(note_task(asyncio.create_task(coro, name=name)))
        awaited_by(name, "Task-1")
        return top[-1]

    def sleeper(name, *awaiters):
        awaited_by(name, *awaiters)
        return note_task(asyncio.create_task(sleep_long(), name=name))

    if sys.version_info >= (3, 11):
        start(service(event, queue), "service")
    start(guard(sleeper("shielded", "guard")), "guard")
    start(gathers(sleeper("gathered-a", "gathers"), sleeper("gathered-b", "gathers"), sleeper("gathered-c", "gathers")), "gathers")
    waited = [sleeper("waited-%d" % i, "waits-all", "waits-first") for i in range(2)]
    start(waits_all(waited), "waits-all")
    start(waits_first(waited), "waits-first")
    start(waits_for(sleeper("timed", "waits-for")), "waits-for")
    awaited_by("Task-1")
    await asyncio.sleep(0.2)
    asyncio.get_running_loop().call_soon(announce)
    await asyncio.gather(*top)


# ----------------------------------------------------------------- gathercycle

async def gather_one(box, key):
    await asyncio.sleep(0.05)
    await asyncio.gather(box[key])


async def await_one(box, key):
    await asyncio.sleep(0.05)
    await box[key]


async def gathercycle_main():
    note_loop("main")
    note_task(asyncio.current_task())
    box = {}
    box["a"] = note_task(asyncio.create_task(gather_one(box, "b"), name="cycle-a"))
    box["b"] = note_task(asyncio.create_task(gather_one(box, "c"), name="cycle-b"))
    box["c"] = note_task(asyncio.create_task(await_one(box, "a"), name="cycle-c"))
    await asyncio.sleep(0.2)
    asyncio.get_running_loop().call_soon(announce)
    await asyncio.gather(*box.values())


# ----------------------------------------------------------------- ready

async def set_and_freeze(event):
    event.set()  # the waiter's wakeup goes to the loop's ready queue, which never runs it
    announce()
    time.sleep(3600.0)


async def ready_main():
    note_loop("main")
    note_task(asyncio.current_task())
    event = asyncio.Event()
    FACTS["event"] = id(event)
    woken = note_task(asyncio.create_task(wait_event(event), name="woken"))
    await asyncio.sleep(0.1)
    setter = note_task(asyncio.create_task(set_and_freeze(event), name="setter"))
    await asyncio.gather(woken, setter)


# ----------------------------------------------------------------- deep

LONG_NAME = "L" * 10240 + "-end"


async def link(depth, n):
    if depth < n:
        await note_task(asyncio.create_task(link(depth + 1, n), name="link-%d" % (depth + 1)))
    else:
        await sleep_long()


async def deep_main():
    note_loop("main")
    note_task(asyncio.current_task())
    FACTS["long_name"] = LONG_NAME
    FACTS["depth"] = 100
    long = note_task(asyncio.create_task(sleep_long(), name=LONG_NAME))
    first = note_task(asyncio.create_task(link(1, 100), name="link-1"))
    await asyncio.sleep(0.3)
    asyncio.get_running_loop().call_soon(announce)
    await asyncio.gather(long, first)


def main():
    mode = sys.argv[1]
    if mode == "stuck":
        asyncio.run(stuck_main())
    elif mode == "lockcycle":
        asyncio.run(lockcycle_main())
    elif mode == "blocked":
        asyncio.run(blocked_main())
    elif mode == "twoloops":
        twoloops()
    elif mode == "taskcycle":
        asyncio.run(taskcycle_main())
    elif mode == "eager":
        asyncio.run(eager_main())
    elif mode in ("shapes", "gathercycle", "ready", "deep"):
        asyncio.run(globals()[mode + "_main"]())
    elif mode == "many":
        asyncio.run(many_main(int(sys.argv[2])))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
