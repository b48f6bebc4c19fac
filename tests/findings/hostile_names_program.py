# SPDX-License-Identifier: Apache-2.0
"""Every name the report prints made of characters a terminal obeys (ESC, a C1 CSI, U+202E, NUL,
BEL, BS, DEL): two threads deadlocked ABBA through with-blocks (thread, function, file, argument,
local and lock names), an asyncio task awaiting an Event (task, coroutine), and this script run by a
python copied under such a name (the executable's module, the script's path). hostile_names.py
checks that the text shows them escaped and the JSON keeps them."""
import asyncio
import json
import os
import sys
import threading
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pause import pause_until_quit  # noqa: E402

H = "\x1b[2J\u009b2J\u202e\x00\x07\x08\x7f"  # ESC, CSI, right-to-left override, NUL, BEL, BS, DEL


def renamed(fn, name, filename, varnames=None):
    """fn with its code's name, file and locals' names replaced: Python keeps any string there."""
    changes = {"co_name": name, "co_filename": filename}
    if sys.version_info >= (3, 11):
        changes["co_qualname"] = name
    if varnames:
        changes["co_varnames"] = varnames
    return types.FunctionType(fn.__code__.replace(**changes), fn.__globals__, name, fn.__defaults__, fn.__closure__)


both = threading.Barrier(2)


def abba(first, second):
    note = "val" + H
    held = first
    with held:
        both.wait()
        wanted = second
        with wanted:
            return note


# Arguments, then locals, in co_varnames' order.
ABBA_VARS = ("first" + H, "second" + H, "note" + H, "held" + H, "wanted" + H)
deadlocked = renamed(abba, "func" + H, "/srv/file" + H + ".py", ABBA_VARS)


async def waits(event):
    await event.wait()


coroutine = renamed(waits, "coro" + H, "/srv/async" + H + ".py")
loop_ready = threading.Event()


def run_loop():
    async def main():
        event = asyncio.Event()
        task = asyncio.get_running_loop().create_task(coroutine(event), name="task" + H)
        await asyncio.sleep(0)
        loop_ready.set()
        await task
    asyncio.run(main())


a, b = threading.Lock(), threading.Lock()
t1 = threading.Thread(target=deadlocked, args=(a, b), name="thrA" + H, daemon=True)
t2 = threading.Thread(target=deadlocked, args=(b, a), name="thrB" + H, daemon=True)
loop = threading.Thread(target=run_loop, name="loop" + H, daemon=True)
for t in (t1, t2, loop):
    t.start()
loop_ready.wait()
both_waiting = False
# Both threads past the barrier, each blocked in its second `with`.
while not both_waiting:
    both_waiting = a.locked() and b.locked() and both.n_waiting == 0
    threading.Event().wait(0.05)
threading.Event().wait(0.3)
print("FACTS " + json.dumps({"hostile": H, "threads": {str(t.native_id): t.name for t in (t1, t2, loop)},
                             "deadlocked": [t1.native_id, t2.native_id], "executable": sys.executable,
                             "script": os.path.abspath(__file__)}), flush=True)
print("READY", flush=True)
pause_until_quit()
