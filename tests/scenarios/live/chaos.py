# SPDX-License-Identifier: Apache-2.0
"""Targets for attaching while the process ends, execs, forks or takes signals (tests/live/chaos.py).
Each starts four threads besides the main one (two that wake every millisecond, two blocked on an
event), prints FACTS and READY, then, by its mode:

  threads       answers "ping" with "pong" and exits 0 on "quit" (until killed)
  exit MS       exits 0 by itself MS ms after READY, its threads still running
  exec MS       MS ms after READY one of its threads (not the main one) execs this program again in
                mode "threads", which prints FACTS and READY once more
  signals       counts the SIGUSR1 it receives: writes "sig N" for each, "count N" on "count",
                and exits 0 on "quit"
  fork          a thread forks in a loop (each child exits at once and is waited for): answers
                "forks" with "forks N" and exits 0 on "quit"
  vfork FIFO    a thread posix_spawns /bin/true (glibc: clone with CLONE_VFORK) with FIFO opened for
                reading first: until a writer opens FIFO the child blocks, and the thread waits for
                it in the kernel where no ptrace interrupt stops it (holding the GIL: the process
                answers "ping" only after that)
"""
import json
import os
import select
import signal
import sys
import threading
import time
import warnings

# 3.12+ warns that fork() in a multi-threaded process may deadlock the child: ours only _exits.
warnings.simplefilter("ignore", DeprecationWarning)

stop = threading.Event()


def waker():
    while not stop.is_set():
        time.sleep(0.001)


def blocked():
    stop.wait()


for target in (waker, waker, blocked, blocked):
    threading.Thread(target=target, daemon=True).start()

mode = sys.argv[1]
counts = {"sig": 0, "forks": 0}


def say(line):
    os.write(1, (line + "\n").encode())


def on_usr1(signum, frame):
    # Counts only: a handler that wrote would run again inside its own write when the next signal
    # comes before it returns (nested handlers, RecursionError under load); the main loop tells.
    counts["sig"] += 1


def fork_loop():
    while not stop.is_set():
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)
        counts["forks"] += 1


if mode == "signals":
    signal.signal(signal.SIGUSR1, on_usr1)
if mode == "fork":
    forker = threading.Thread(target=fork_loop)
    forker.start()
    while counts["forks"] < 3:
        time.sleep(0.001)

say("FACTS " + json.dumps({"pid": os.getpid(), "main_lwp": threading.get_native_id(), "mode": mode}))
say("READY")

if mode == "exit":
    time.sleep(int(sys.argv[2]) / 1000)
    sys.exit(0)
if mode == "vfork":
    def spawner():
        child = os.posix_spawn("/bin/true", ["true"], os.environ,
                               file_actions=[(os.POSIX_SPAWN_OPEN, 3, sys.argv[2], os.O_RDONLY, 0)])
        os.waitpid(child, 0)
    spawned = threading.Thread(target=spawner)
    spawned.start()
if mode == "exec":
    def execer():
        time.sleep(int(sys.argv[2]) / 1000)
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), "threads"])
    threading.Thread(target=execer, daemon=True).start()

# The main thread reads its commands with a short timeout: a signal that another thread took is
# handled (by this thread, as Python does) within 10 ms.
buffered = b""
told = 0
while True:
    ready, _, _ = select.select([0], [], [], 0.01)
    while told < counts["sig"]:  # every SIGUSR1 handled since, one line each
        told += 1
        say("sig %d" % told)
    if not ready:
        continue
    data = os.read(0, 4096)
    if not data:
        break
    buffered += data
    lines = buffered.split(b"\n")
    buffered = lines.pop()
    quit_now = False
    for line in lines:
        command = line.decode().strip()
        if command == "ping":
            say("pong")
        elif command in ("count", "forks"):
            say("%s %d" % (command, counts["sig" if command == "count" else "forks"]))
        elif command == "quit":
            quit_now = True
    if quit_now:
        break
stop.set()
if mode == "fork":
    forker.join()
if mode == "vfork":
    spawned.join()
sys.exit(0)
