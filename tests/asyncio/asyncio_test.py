# SPDX-License-Identifier: Apache-2.0
"""--tasks on asyncio programs (tests/asyncio/scenarios.py) on Debian 12's python3.11: every event loop
and task, what each awaits and who awaits it, task deadlocks and event-loop-blocked.

Kinds: gcore (the CLI on gdb's core, held against gdb's own reading of the same core), live (the CLI
on the running process, --pid), gdb and lldb (their py-tstates-check --tasks --json on a gcore core,
against the CLI's). Truth: what the program printed of itself (id() of its tasks, loops, Event, Queue,
future and locks; task names; threading.get_native_id() of each loop's thread), the lines of its own
source, and gdb (TaskObj through _asyncio's DWARF, names and coroutine frames through
python3.11-gdb.py's PyObjectPtr/PyFramePtr, py-bt of a blocked loop's thread).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import scenario  # noqa: E402
import pyenv  # noqa: E402
from debugger_batch import core_json  # noqa: E402

PROGRAM = os.path.join(HERE, "scenarios.py")
PYTHON = "/usr/bin/python3.11"  # Debian 12's, with python3.11-dbg's DWARF and gdb script
PROBLEMS = []


def expect(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        PROBLEMS.append(what)


def line_of(text):
    """The line number of the program's line holding `text` (once)."""
    with open(PROGRAM) as f:
        lines = [i + 1 for i, line in enumerate(f) if text in line]
    assert len(lines) == 1, (text, lines)
    return lines[0]


def h(n):
    return "0x%x" % n


def tasks_by_name(report):
    out = {}
    for loop in report["event_loops"]:
        for t in loop["tasks"]:
            out[t["name"]] = dict(t, loop=loop["loop"])
    return out


def check_loops(facts, report):
    loops = {l["loop"]: l for l in report["event_loops"]}
    expect(len(loops) == len(facts["loops"]), "%d event loops (the program ran %d)" % (len(loops), len(facts["loops"])))
    for l in facts["loops"]:
        mine = loops.get(h(l["loop"]))
        expect(mine is not None, "loop %s (id() %s) is listed" % (l["name"], h(l["loop"])))
        if mine:
            expect(mine["lwp"] == l["lwp"], "loop %s runs on LWP %s (get_native_id: %d)" % (l["name"], mine["lwp"], l["lwp"]))
    tasks = tasks_by_name(report)
    expect(set(tasks) == set(facts["tasks"]), "tasks %s are the program's %s" % (sorted(tasks), sorted(facts["tasks"])))
    for name, ident in facts["tasks"].items():
        if name in tasks:
            expect(tasks[name]["address"] == h(ident), "task %s at %s (id() %s)" % (name, tasks[name]["address"], h(ident)))
    return tasks


def frame_is(task, index, function, line, what):
    frames = task["frames"]
    ok = len(frames) > index and frames[index]["function"] == function and frames[index]["line"] == line
    expect(ok, "%s: frame #%d is %s line %d (%s)" % (what, index, function, line,
                                                     json.dumps(frames[index]) if len(frames) > index else "no frame"))


def awaits(task, kind, obj=None, other=None):
    a = task["awaits"] or {}
    ok = a.get("kind") == kind and (obj is None or a.get("object") == h(obj)) and (other is None or a.get("task") == other)
    expect(ok, "task %s awaits %s %s (%s)" % (task["name"], kind, h(obj) if obj else "", json.dumps(a)))


def check_stuck(facts, report, status):
    expect(status == 0, "exit status 0 (no error finding): %d" % status)
    tasks = check_loops(facts, report)
    t = tasks
    awaits(t["waits-event"], "event", facts["event"])
    frame_is(t["waits-event"], 1, "wait_event", line_of("await event.wait()"), "waits-event")
    awaits(t["consumer"], "queue", facts["queue"])
    frame_is(t["consumer"], 1, "consume", line_of("item = await queue.get()"), "consumer")
    for name in ("sleeper", "child-b"):
        awaits(t[name], "sleep")
        frame_is(t[name], 1, "sleep_long", line_of("await asyncio.sleep(3600)"), name)
    awaits(t["child-a-inner"], "future", facts["future"])
    frame_is(t["child-a-inner"], 0, "grandchild", line_of("    await future"), "child-a-inner")
    awaits(t["child-a"], "task", other=h(facts["tasks"]["child-a-inner"]))
    awaits(t["parent"], "gather")
    awaits(t["Task-1"], "gather")
    by = lambda name: sorted(t[name]["awaited_by"])
    expect(by("child-a-inner") == [h(facts["tasks"]["child-a"])], "child-a-inner is awaited by child-a: %s" % by("child-a-inner"))
    for child in ("child-a", "child-b"):
        expect(by(child) == [h(facts["tasks"]["parent"])], "%s is awaited by parent (through gather): %s" % (child, by(child)))
    for child in ("waits-event", "consumer", "sleeper", "parent"):
        expect(by(child) == [h(facts["tasks"]["Task-1"])], "%s is awaited by Task-1 (through gather): %s" % (child, by(child)))
    loop = report["event_loops"][0]
    expect(loop["running_task"] is None, "no task runs (the loop waits in its selector)")
    expect(all(x["state"] == "pending" for x in t.values()), "every task is pending")
    expect(not [f for f in report["findings"] if f["code"] in ("deadlock", "event-loop-blocked")], "no task finding")


def check_lockcycle(facts, report, status):
    expect(status == 1, "exit status 1 (a deadlock): %d" % status)
    tasks = check_loops(facts, report)
    one, two = h(facts["tasks"]["takes-a-then-b"]), h(facts["tasks"]["takes-b-then-a"])
    lock_a, lock_b = h(facts["locks"]["lock_a"]), h(facts["locks"]["lock_b"])
    awaits(tasks["takes-a-then-b"], "lock", facts["locks"]["lock_b"])
    awaits(tasks["takes-b-then-a"], "lock", facts["locks"]["lock_a"])
    frame_is(tasks["takes-a-then-b"], 2, "take_both", line_of("async with second:"), "takes-a-then-b")
    cycles = [f for f in report["findings"] if f["code"] == "deadlock"]
    expect(len(cycles) == 1, "one deadlock finding: %d" % len(cycles))
    if cycles:
        steps = {s["task"]: s for s in cycles[0]["cycle"]}
        expect(set(steps) == {one, two}, "the cycle is the two tasks: %s" % sorted(steps))
        if set(steps) == {one, two}:
            expect(steps[one]["waits_for"] == "lock" and steps[one]["object"] == lock_b and steps[one]["held_by_task"] == two,
                   "takes-a-then-b waits for lock_b held by takes-b-then-a: %s" % json.dumps(steps[one]))
            expect(steps[two]["waits_for"] == "lock" and steps[two]["object"] == lock_a and steps[two]["held_by_task"] == one,
                   "takes-b-then-a waits for lock_a held by takes-a-then-b: %s" % json.dumps(steps[two]))
            expect(steps[one]["at"]["python"]["line"] == line_of("async with second:"), "the cycle says where: %s" % steps[one].get("at"))


def text_facts(facts):
    """What TEXT's words name: the sleep's system call, the locks' addresses."""
    out = {"call": sleep_call(facts)}
    out.update({k: h(v) for k, v in facts.get("locks", {}).items()})
    return out


def sleep_call(facts):
    """The system call time.sleep makes: clock_nanosleep from 3.11, select before."""
    return "clock_nanosleep" if tuple(facts["python"]) >= (3, 11) else "select"


def check_blocked(facts, report, status):
    expect(status == 1, "exit status 1 (a warning, but a hang: the loop is blocked): %d" % status)
    tasks = check_loops(facts, report)
    freezer = tasks["freezer"]
    lwp = facts["loops"][0]["lwp"]
    expect(freezer["state"] == "running" and report["event_loops"][0]["lwp"] == lwp,
           "freezer runs, on its loop's LWP %d: %s %s" % (lwp, freezer["state"], report["event_loops"][0]["lwp"]))
    frame_is(freezer, 0, "freezes", line_of("time.sleep(3600)"), "freezer")
    loop = report["event_loops"][0]
    expect(loop["running_task"] == h(facts["tasks"]["freezer"]), "the loop's running task is freezer")
    expect(loop["ready"] == 1, "one ready callback (never_runs): %s" % loop["ready"])
    blocked = [f for f in report["findings"] if f["code"] == "event-loop-blocked"]
    expect(len(blocked) == 1, "one event-loop-blocked finding: %d" % len(blocked))
    if blocked:
        f = blocked[0]
        call = sleep_call(facts)
        expect(f["lwp"] == lwp and f["task"] == h(facts["tasks"]["freezer"]) and f["function"] == call and f["severity"] == "warning",
               "event-loop-blocked names LWP %d, task freezer, %s: %s" % (lwp, call, json.dumps({k: f[k] for k in ("lwp", "task", "function")})))
        expect("freezes (%s:%d)" % (facts["file"], line_of("time.sleep(3600)")) in f["message"], "its message names the frame: " + f["message"])


def check_twoloops(facts, report, status):
    expect(status == 0, "exit status 0: %d" % status)
    tasks = check_loops(facts, report)
    for l in facts["loops"]:
        waiter = tasks[l["name"] + "-waiter"]
        expect(waiter["loop"] == h(l["loop"]), "%s-waiter belongs to loop %s" % (l["name"], h(l["loop"])))
        awaits(tasks[l["name"] + "-main"], "task", other=waiter["address"])


def check_eager(facts, report, status):
    expect(status == 0, "exit status 0: %d" % status)
    tasks = check_loops(facts, report)
    for i in range(3):
        awaits(tasks["eager-%d" % i], "event", facts["event"])
        frame_is(tasks["eager-%d" % i], 1, "wait_event", line_of("await event.wait()"), "eager-%d" % i)


def check_taskcycle(facts, report, status):
    expect(status == 1, "exit status 1 (a deadlock): %d" % status)
    tasks = check_loops(facts, report)
    one, two = h(facts["tasks"]["awaits-two"]), h(facts["tasks"]["awaits-one"])
    awaits(tasks["awaits-two"], "task", other=two)
    awaits(tasks["awaits-one"], "task", other=one)
    main = h(facts["tasks"]["Task-1"])
    expect(sorted(tasks["awaits-two"]["awaited_by"]) == sorted([two, main]) and sorted(tasks["awaits-one"]["awaited_by"]) == sorted([one, main]),
           "each is awaited by the other and by Task-1 (its gather): %s %s" % (tasks["awaits-two"]["awaited_by"], tasks["awaits-one"]["awaited_by"]))
    cycles = [f for f in report["findings"] if f["code"] == "deadlock"]
    expect(len(cycles) == 1 and {s["task"] for s in cycles[0]["cycle"]} == {one, two} and
           all(s["waits_for"] == "task" for s in cycles[0]["cycle"]), "one deadlock: the two tasks awaiting each other")
    if cycles:
        steps = {s["task"]: s for s in cycles[0]["cycle"]}
        expect(steps.get(one, {}).get("held_by_task") == two and steps.get(two, {}).get("held_by_task") == one,
               "each step names the other task: %s" % json.dumps(cycles[0]["cycle"]))


def names_of(report):
    return {t["address"]: t["name"] for l in report["event_loops"] for t in l["tasks"]}


def check_shapes(facts, report, status):
    """Each task's awaited_by is the one the program knows (FACTS["awaited_by"]: the tasks that
    await it, directly or through a TaskGroup, shield, gather of gathers, wait or wait_for)."""
    expect(status == 0, "exit status 0 (no error finding): %d" % status)
    tasks = check_loops(facts, report)
    for name, awaiters in sorted(facts["awaited_by"].items()):
        got = sorted(tasks[name]["awaited_by"]) if name in tasks else None
        want = sorted(h(facts["tasks"][a]) for a in awaiters)
        names = names_of(report)
        expect(got == want, "%s is awaited by %s: %s" % (name, awaiters or "none", [names.get(a, a) for a in got or []]))
    expect(not [f for f in report["findings"] if f["code"] in ("deadlock", "event-loop-blocked")], "no task finding")


def check_gathercycle(facts, report, status):
    expect(status == 1, "exit status 1 (a deadlock): %d" % status)
    tasks = check_loops(facts, report)
    a, b, c = (h(facts["tasks"]["cycle-" + x]) for x in "abc")
    main = h(facts["tasks"]["Task-1"])
    for name, awaiters in (("cycle-a", [c, main]), ("cycle-b", [a, main]), ("cycle-c", [b, main])):
        expect(sorted(tasks[name]["awaited_by"]) == sorted(awaiters), "%s is awaited by %s: %s" % (name, awaiters, tasks[name]["awaited_by"]))
    cycles = [f for f in report["findings"] if f["code"] == "deadlock"]
    expect(len(cycles) == 1 and cycles[0]["severity"] == "error", "one deadlock finding (error): %s" % [f["code"] for f in cycles])
    if cycles:
        steps = {s["task"]: s for s in cycles[0]["cycle"]}
        expect(set(steps) == {a, b, c}, "the cycle is the three tasks: %s" % sorted(steps))
        if set(steps) == {a, b, c}:
            want = {a: ("gather", b), b: ("gather", c), c: ("task", a)}
            for t, (kind, nxt) in want.items():
                expect((steps[t]["waits_for"], steps[t]["held_by_task"]) == (kind, nxt),
                       "%s waits for %s through %s: %s" % (t, nxt, kind, json.dumps(steps[t])))
            expect(steps[a]["object"] == tasks["cycle-a"]["awaits"]["object"] and tasks["cycle-a"]["awaits"]["kind"] == "gather",
                   "cycle-a's step names the gather it awaits: %s" % steps[a]["object"])
            expect(steps[c]["at"]["python"]["line"] == line_of("    await box[key]"), "the cycle says where: %s" % steps[c].get("at"))


def check_ready(facts, report, status):
    expect(status in (0, 1), "exit status 0 or 1: %d" % status)
    tasks = check_loops(facts, report)
    woken = tasks["woken"]
    expect(woken["state"] == "ready" and woken["awaits"] is None,
           "woken (its Event set, its wakeup queued) is ready and awaits nothing: %s %s" % (woken["state"], json.dumps(woken["awaits"])))
    frame_is(woken, 1, "wait_event", line_of("await event.wait()"), "woken")
    expect(tasks["setter"]["state"] == "running", "setter runs: %s" % tasks["setter"]["state"])
    awaits(tasks["Task-1"], "gather")
    expect(report["event_loops"][0]["ready"] >= 1, "the loop's ready queue holds the wakeup: %s" % report["event_loops"][0]["ready"])


def check_deep(facts, report, status):
    expect(status == 0, "exit status 0: %d" % status)
    tasks = check_loops(facts, report)  # the 10 kB name among them, whole
    long = tasks.get(facts["long_name"])
    expect(long is not None and long["name"] == facts["long_name"], "the %d-character name is whole in the JSON" % len(facts["long_name"]))
    for i in range(2, facts["depth"] + 1):
        by = tasks["link-%d" % i]["awaited_by"]
        if by != [h(facts["tasks"]["link-%d" % (i - 1)])]:
            expect(False, "link-%d is awaited by link-%d: %s" % (i, i - 1, by))
            break
    else:
        expect(True, "each of link-2..link-%d is awaited by the one before" % facts["depth"])


CHECKS = {"shapes": check_shapes, "gathercycle": check_gathercycle, "ready": check_ready, "deep": check_deep,
          "eager": check_eager, "taskcycle": check_taskcycle, "stuck": check_stuck, "lockcycle": check_lockcycle, "blocked": check_blocked, "twoloops": check_twoloops}
TEXT = {"stuck": ["ASYNCIO (1 event loop, 8 tasks", "(T) 'child-a-inner'", "awaits asyncio.Event", "awaits asyncio.Queue"],
        "lockcycle": ["HANG  deadlock: 2 asyncio tasks wait for each other", "holds asyncio lock %(lock_a)s", "holds asyncio lock %(lock_b)s"],
        "blocked": ["HANG  event loop", "is blocked in %(call)s()", "event-loop-blocked"],
        "twoloops": ["ASYNCIO (2 event loops, 4 tasks"], "eager": ["(T) 'eager-2'"],
        "taskcycle": ["HANG  deadlock: 2 asyncio tasks wait for each other", "<- cycle: back to this task"],
        "shapes": ["(T) 'shielded'", "(T) 'gathered-c'"],
        "gathercycle": ["HANG  deadlock: 3 asyncio tasks wait for each other", "awaits gather", ", which waits for task 'cycle-", "<- cycle: back to this task"],
        "ready": ["(T) 'woken' ", "ready to run (its next step is queued)"],
        "deep": ["'" + "L" * 200 + "'\u2026 (10044 more characters)", "\u2026 36 more tasks it awaits, deeper than 64 levels"]}


def without_tasks(pytstates, args, report, status, live):
    """The same check without --tasks: asyncio is analysed all the same (the same findings, exit
    status and event_loops; live, where the loop runs on between reads, the same finding codes), and
    the text says in one line how many loops and tasks there are instead of drawing the tree."""
    plain_status, plain, err = scenario.run_pytstates(pytstates, ["check", "--json"] + args)
    expect(plain_status == status, "check without --tasks exits as with it: %d, %d %s" % (plain_status, status, err.strip()))
    if plain_status not in (0, 1):
        return
    if live:
        codes = lambda r: sorted(f["code"] for f in r["findings"])
        expect(codes(plain) == codes(report), "without --tasks the same finding codes as with it: %s, %s" % (codes(plain), codes(report)))
    else:
        expect(plain["findings"] == report["findings"], "without --tasks the same findings as with it: %s" % [f["code"] for f in plain["findings"]])
        expect(plain["event_loops"] == report["event_loops"], "without --tasks the same event_loops in JSON")
    _, text, _ = scenario.run_pytstates(pytstates, ["check"] + args)
    tasks = sum(len(l["tasks"]) for l in plain["event_loops"])
    loops = len(plain["event_loops"])
    line = "ASYNCIO: %d event loop%s, %d task%s (--tasks shows them)" % (loops, "" if loops == 1 else "s", tasks, "" if tasks == 1 else "s")
    expect(line in text and "(T) '" not in text, "without --tasks the text says %r and draws no tree%s" % (line, "" if line in text and "(T) '" not in text else ":\n" + text[:3000]))
    for f in plain["findings"]:
        if f.get("cycle") and f["cycle"][0].get("task"):
            expect("HANG  deadlock: %d asyncio tasks wait for each other" % len(f["cycle"]) in text, "without --tasks the text tells the task deadlock")
    print("without --tasks: exit %d, findings %s; %s" % (plain_status, sorted(f["code"] for f in plain["findings"]), line))


def local_of(task, function, name):
    """The local `name` of the task's frame running `function` (None when not there)."""
    for f in task["frames"]:
        if f["function"] == function:
            return next((l for l in f.get("locals", []) if l["name"] == name), None)
    return None


def check_locals(facts, report, text):
    """--tasks --locals on the stuck service: each task frame's arguments and locals, against the
    program's own id() of the objects it passed and the values it wrote."""
    t = tasks_by_name(report)
    for name, function, local, kind, ident, typ in (
            ("waits-event", "wait_event", "event", "arg", facts["event"], "Event"),
            ("consumer", "consume", "queue", "arg", facts["queue"], "Queue"),
            ("child-a-inner", "grandchild", "future", "arg", facts["future"], "Future"),
            ("child-a", "child", "future", "arg", facts["future"], "Future"),
            ("child-a", "child", "inner", "local", facts["tasks"]["child-a-inner"], "Task")):
        l = local_of(t[name], function, local) or {}
        expect(l.get("address") == h(ident) and (l.get("type") or "").endswith(typ) and l.get("kind") == kind,
               "task %s, frame %s: %s %s is the program's %s %s (%s)" % (name, function, kind, local, typ, h(ident), json.dumps(l)))
    l = local_of(t["child-a"], "child", "name") or {}
    expect(l.get("value") == "'child-a'" and l.get("type") == "str", "task child-a, frame child: name = 'child-a' (%s)" % json.dumps(l))
    for name in ("sleeper", "child-b"):
        l = local_of(t[name], "sleep", "delay") or {}
        expect(l.get("value") == "3600" and l.get("type") == "int", "task %s, asyncio's sleep: delay = 3600 (%s)" % (name, json.dumps(l)))
    every = [f for task in t.values() for f in task["frames"]]
    expect(all("locals" in f for f in every), "every task frame (%d) says its locals" % len(every))
    # The text's await tree: the locals under the task's frame, as under a thread's.
    lines = text.splitlines()
    bare = [line.lstrip(" \u2502") for line in lines]  # without the tree's indent and branch lines
    at = next((i for i, line in enumerate(bare) if line.startswith("child  %s:" % facts["file"])), None)  # the whole path: no terminal
    below = [x.strip() for x in bare[at + 1:at + 6]] if at is not None else []
    expect("Arguments:" in below and "name = 'child-a'" in below,
           "the text shows child's arguments under its frame in the await tree: %s" % below)


def python_gdb_script(python):
    """The python-gdb script of an unpacked root's python3.1X (its usr/share/gdb/auto-load), None else."""
    usr = os.path.dirname(os.path.dirname(python))
    if usr == "/usr":
        return None  # the host's own: auto-loaded
    script = os.path.join(usr, "share", "gdb", "auto-load", "usr", "bin", os.path.basename(python) + "-gdb.py")
    return script if os.path.exists(script) else None


def gdb_oracle(core, facts, report, python, debug_dir=None):
    """gdb's own reading of every task (tests/asyncio/gdb_tasks.py) against the report. debug_dir:
    the debug-file directory of an unpacked root's CPython (3.14/3.15: its -dbg package's DWARF)."""
    tasks = [t for l in report["event_loops"] for t in l["tasks"]]
    env = scenario.offline_env()
    env["PYTSTATES_TASKS"] = json.dumps([t["address"] for t in tasks])
    argv = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off", "-iex", "set auto-load safe-path /",
            ] + (["-iex", "set debug-file-directory " + debug_dir] if debug_dir else []) + [
            "-ex", "core-file " + core]
    # An unpacked root's CPython: gdb's auto-load looks for its python-gdb script under the host's
    # /usr/share/gdb, not the root's: it is sourced by hand (the script Debian ships with the build).
    script = python_gdb_script(python)
    if script:
        argv += ["-ex", "source " + script]
    argv += ["-x", os.path.join(HERE, "gdb_tasks.py"), "-ex", "thread apply all py-bt", python]
    out = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=200).stdout.decode(errors="replace")
    line = [l for l in out.splitlines() if l.startswith("GDB-TASKS ")]
    expect(len(line) == 1, "gdb read the tasks" + ("" if line else ":\n" + out[-2000:]))
    if not line:
        return
    said = json.loads(line[0][len("GDB-TASKS "):])
    states = {0: "pending", 1: "cancelled", 2: "done"}
    for t in tasks:
        g = said[t["address"]]
        if "name" in g and g.get("name_length", len(g["name"])) > len(g["name"]):  # cut by python-gdb's safety limit
            expect(t["name"].startswith(g["name"]) and len(t["name"]) == g["name_length"],
                   "gdb: task %s's %d-character name starts %s..." % (t["address"], g["name_length"], g["name"][:40]))
        elif "name" in g:
            expect(g["name"] == t["name"], "gdb: task %s is named %s" % (t["address"], g["name"]))
        else:
            print("gdb has no python-gdb script for %s: task names and coroutine frames are not read by gdb" % python)
        mine = "pending" if t["state"] in ("running", "ready") else t["state"]
        expect(states.get(g["state"]) == mine, "gdb: %s's fut_state is %s" % (t["name"], states.get(g["state"])))
        a = t["awaits"] or {}
        if t["state"] == "ready":  # its step is queued: it awaits no future, or one that is done
            expect(g["fut_waiter"] == "0x0" or g.get("waiter_state", 0) != 0,
                   "gdb: ready %s's fut_waiter %s is none or done (fut_state %s)" % (t["name"], g["fut_waiter"], g.get("waiter_state")))
        elif a.get("kind") in ("task", "future", "gather", "sleep") or not a:
            future = a.get("object")  # the awaited future itself
            expect((future or "0x0") == g["fut_waiter"], "gdb: %s's fut_waiter is %s (pytstates %s)" % (t["name"], g["fut_waiter"], future))
        else:  # an Event, Lock, Queue: its future is the one fut_waiter names
            expect(g["fut_waiter"] != "0x0", "gdb: %s's fut_waiter %s is set (it awaits a %s's future)" % (t["name"], g["fut_waiter"], a["kind"]))
        if t["state"] == "pending" and "coro_function" in g:
            outer = t["frames"][-1] if t["frames"] else {}
            expect(outer.get("function") == g["coro_function"] and outer.get("line") == g["coro_line"],
                   "gdb (py frame of the task's coroutine): %s at %s:%s; pytstates' outermost frame %s" % (
                       t["name"], g["coro_function"], g["coro_line"], json.dumps(outer)))
    running = [t for t in tasks if t["state"] == "running"]
    for t in running:
        if 'Undefined command: "py-bt"' in out:
            print("gdb has no py-bt for %s: the running task's frame is not read by gdb" % python)
            break
        want = 'line %d, in %s' % (t["frames"][0]["line"], t["frames"][0]["function"])
        if "unable to read python frame information" in out and want not in out:
            # 3.14's py-bt reads no frame from this core: the thread state's current_frame, read by gdb.
            top = {"function": t["frames"][0]["function"], "line": t["frames"][0]["line"]}
            expect(top in said.get("_tops", []), "gdb's current_frame of a thread state is the running task's frame (%s): %s"
                   % (want, said.get("_tops")))
            continue
        expect(want in out, "gdb's py-bt shows the running task's frame (%s)" % want)


def cpython_oracle(launcher, env, pid, report):
    """CPython 3.14's own reading of the same live process: `python3.14 -m asyncio ps PID` (a row
    per task and awaiter, by id) and `pstree PID` (the await tree by name; on a cycle, status 1 and
    the cycle's names), against the report's tasks and awaited_by."""
    run = lambda what: subprocess.run(launcher + ["-m", "asyncio", what, str(pid)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, env=env, timeout=120)
    tasks = [t for l in report["event_loops"] for t in l["tasks"] if t["state"] not in ("done", "cancelled")]
    names = {t["address"]: t["name"] for t in tasks}
    ours = {t["address"]: set(t["awaited_by"]) for t in tasks}
    ps = run("ps")
    expect(ps.returncode == 0, "python -m asyncio ps ran: %d %s" % (ps.returncode, ps.stderr.decode(errors="replace")[-500:]))
    theirs = {}
    for line in ps.stdout.decode(errors="replace").splitlines()[2:]:
        words = line.split()
        if len(words) >= 4 and words[1].startswith("0x"):
            theirs.setdefault(words[1], set())
            if words[-1] != "0x0":
                theirs[words[1]].add(words[-1])
    expect(set(theirs) == set(ours), "ps lists the report's %d tasks: %d (%s)" % (len(ours), len(theirs), sorted(set(theirs) ^ set(ours))))
    same = [a for a in ours if theirs.get(a) == ours[a]]
    expect(len(same) == len(ours), "ps: %d/%d tasks' awaiters are the report's%s" % (len(same), len(ours), "".join(
        "\n      %s: ps %s, pytstates %s" % (names[a], sorted(names.get(x, x) for x in theirs.get(a, ())), sorted(names.get(x, x) for x in ours[a]))
        for a in ours if a not in same)))
    tree = run("pstree")
    pairs = {(names.get(by, by), names[a]) for a in ours for by in ours[a]}
    if tree.returncode == 1 and b"contains cycles" in tree.stderr:
        cycles = [l[len("cycle: "):].split(" \u2192 ") for l in tree.stderr.decode().splitlines() if l.startswith("cycle: ")]
        mine = [{s["task"] for s in f["cycle"]} for f in report["findings"] if f["code"] == "deadlock"]
        expect(len(cycles) == len(mine) and all({n for n in c} in [{names[x] for x in m} for m in mine] for c in cycles),
               "pstree's cycles %s are the report's deadlocks %s" % (cycles, [sorted(names[x] for x in m) for m in mine]))
        return
    expect(tree.returncode == 0, "python -m asyncio pstree ran: %d %s" % (tree.returncode, tree.stderr.decode(errors="replace")[-500:]))
    # Each "(T) name" line's awaiter is the nearest "(T)" line above it at a smaller indent.
    stack, edges = [], set()
    for line in tree.stdout.decode(errors="replace").splitlines():
        at = line.find("(T) ")
        if at < 0:
            continue
        while stack and stack[-1][0] >= at:
            stack.pop()
        name = line[at + 4:]
        if stack:
            edges.add((stack[-1][1], name))
        stack.append((at, name))
    expect(edges == pairs, "pstree's %d awaiter edges are the report's %d%s" % (len(edges), len(pairs), "".join(
        "\n      %s %s awaits %s" % (who, e[0], e[1]) for who, diff in (("only pstree:", edges - pairs), ("only pytstates:", pairs - edges))
        for e in sorted(diff))))


def unread(args):
    """A CPython whose asyncio structures are not read yet: the report says so in a note and lists
    no loop or task (nothing claimed)."""
    full, python = pyenv.require(args.pyenv_version)
    facts, core = scenario.take_core([python, PROGRAM, "stuck"])
    try:
        status, report, err = scenario.run_pytstates(args.pytstates, ["check", "--tasks", "--json", "--core", core, "--exe", python])
        expect(status == 0, "check --tasks on %s's core: status %d %s" % (full, status, err.strip()))
        notes = [w for w in report.get("warnings", []) if w.startswith("asyncio: ")] if status == 0 else []
        expect(any("read on CPython 3.9 to 3.15" in n and full in n for n in notes), "a note says %s is not read: %s" % (full, notes))
        expect(status == 0 and report["event_loops"] == [], "no loop or task is claimed: %s" % (report.get("event_loops") if status == 0 else None))
        status, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--tasks", "--core", core, "--exe", python])
        expect("note: asyncio's structures are read on CPython 3.9 to 3.15" in text, "the text says so too")
    finally:
        scenario.cleanup(core)
    if PROBLEMS:
        sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script")
    p.add_argument("--lldb-plugin")
    p.add_argument("scenario", choices=sorted(CHECKS))
    p.add_argument("--pyenv-version", help="pyenv's CPython 3.N in place of Debian's python3.11 (unread: one whose asyncio is not read)")
    p.add_argument("--sid-version", choices=["3.14", "3.15"], help="Debian unstable's CPython (scripts/debian-python)")
    p.add_argument("--no-dwarf", action="store_true", help="pytstates reads no DWARF (the built-in tables)")
    p.add_argument("--python314-dir", default="")
    p.add_argument("--python315-dir", default="")
    p.add_argument("kind", choices=["gcore", "live", "gdb", "lldb", "unread", "locals", "pstree"])
    args = p.parse_args()
    if args.kind == "unread":
        unread(args)
        return
    python = PYTHON
    if args.pyenv_version:
        # pyenv's CPython: no python-gdb script, so gdb's reading is _asyncio's DWARF only.
        full, python = pyenv.require(args.pyenv_version)
        print("CPython %s from pyenv: %s" % (full, python))
    env = None
    extra = ["--no-dwarf"] if args.no_dwarf else []  # pytstates' options for this interpreter
    sysroot = []
    launcher = [python]
    debug_dir = None
    if args.sid_version:
        # Debian unstable's python3.14/3.15 (scripts/debian-python), started through its root's ld.so.
        cache = args.python314_dir if args.sid_version == "3.14" else args.python315_dir
        out = subprocess.run([os.path.join(HERE, "..", "..", "scripts", "debian-python"), args.sid_version, cache],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            print("NOT RUN (not a pass): CPython %s from Debian's unstable suite is not available: %s"
                  % (args.sid_version, out.stderr.decode(errors="replace").strip()))
            sys.exit(77)
        root = out.stdout.decode().strip().splitlines()[-1]
        env = scenario.offline_env()
        env["PYTHONHOME"] = os.path.join(root, "usr")
        python = os.path.join(root, "usr", "bin", "python" + args.sid_version)
        launcher = [os.path.join(root, "lib64", "ld-linux-x86-64.so.2"), "--library-path",
                    os.path.join(root, "lib", "x86_64-linux-gnu"), python]
        debug_dir = os.path.join(root, "usr", "lib", "debug")
        sysroot = ["--sysroot", root]  # its debug files (python3.1X-dbg's DWARF) are under the root (--core only)
        print("CPython %s from Debian's unstable suite: %s" % (args.sid_version, python))
    argv = launcher + [PROGRAM, args.scenario]
    check = CHECKS[args.scenario]
    if args.kind == "pstree":  # 3.14+: CPython's own tools on the same live process
        with scenario.running(argv, env=env) as (proc, facts):
            status, report, err = scenario.run_pytstates(args.pytstates, ["check"] + extra + ["--tasks", "--json", "--pid", str(proc.pid)])
            expect(status in (0, 1), "check --tasks --pid ran: status %d %s" % (status, err.strip()))
            if status in (0, 1):
                check(facts, report, status)
                cpython_oracle(launcher, env, proc.pid, report)
            expect(proc.poll() is None, "the program runs on after the reads")
    elif args.kind == "live":
        with scenario.running(argv, env=env) as (proc, facts):
            status, report, err = scenario.run_pytstates(args.pytstates, ["check"] + extra + ["--tasks", "--json", "--pid", str(proc.pid)])
            expect(status in (0, 1), "check --tasks --pid ran: status %d %s" % (status, err.strip()))
            if status in (0, 1):
                check(facts, report, status)
            status, text, _ = scenario.run_pytstates(args.pytstates, ["check"] + extra + ["--tasks", "--pid", str(proc.pid)])
            for words in TEXT[args.scenario]:
                words = words % text_facts(facts) if "%(" in words else words
                expect(words in text, "text says %r" % words)
            without_tasks(args.pytstates, extra + ["--pid", str(proc.pid)], report, status, True)
            expect(proc.poll() is None, "the program runs on after both reads")
    else:
        facts, core = scenario.take_core(argv, env=env)
        try:
            status, report, err = scenario.run_pytstates(args.pytstates, ["check"] + extra + sysroot + ["--tasks", "--json", "--core", core, "--exe", python])
            expect(status in (0, 1), "check --tasks --core ran: status %d %s" % (status, err.strip()))
            if status not in (0, 1):
                raise SystemExit(1)
            if args.kind == "locals":
                status, report, err = scenario.run_pytstates(args.pytstates, ["check"] + extra + sysroot + ["--tasks", "--locals", "--json", "--core", core, "--exe", python])
                expect(status in (0, 1), "check --tasks --locals --core ran: status %d %s" % (status, err.strip()))
                status, text, _ = scenario.run_pytstates(args.pytstates, ["check"] + extra + sysroot + ["--tasks", "--locals", "--core", core, "--exe", python])
                check_locals(facts, report, text)
            elif args.kind == "gcore":
                check(facts, report, status)
                status, text, _ = scenario.run_pytstates(args.pytstates, ["check"] + extra + sysroot + ["--tasks", "--core", core, "--exe", python])
                print(text)
                if args.sid_version:  # the layout read as asked: the -dbg DWARF under --sysroot, or none
                    want = "(layout from %s)" % ("_Py_DebugOffsets" if args.no_dwarf else "DWARF")
                    expect(want in text, "the runtime's layout: %s" % want)
                for words in TEXT[args.scenario]:
                    words = words % text_facts(facts) if "%(" in words else words
                    expect(words in text, "text says %r" % words)
                without_tasks(args.pytstates, extra + sysroot + ["--core", core, "--exe", python], report, status, False)
                gdb_oracle(core, facts, report, python, debug_dir)
            else:
                loads = args.gdb_script if args.kind == "gdb" else args.lldb_plugin
                ours = core_json(args.kind, loads, python, core, "py-tstates-check --json --tasks")
                # the status the CLI would give this report (CONTRACT.md): a crash, a hang or an error finding is 1
                hangs = ("deadlock", "gil-held-while-blocked", "stop-the-world-blocked", "event-loop-blocked")
                check(facts, ours, 1 if ours["target"].get("crash") or any(f["severity"] == "error" or f["code"] in hangs
                                                                           for f in ours["findings"]) else 0)
                expect(ours["event_loops"] == report["event_loops"], "%s's event_loops are the CLI's" % args.kind)
                codes = lambda r: sorted((f["code"], f["message"]) for f in r["findings"])
                expect(codes(ours) == codes(report), "%s's findings are the CLI's" % args.kind)
        finally:
            scenario.cleanup(core)
    if PROBLEMS:
        print("%d problem(s):\n  %s" % (len(PROBLEMS), "\n  ".join(PROBLEMS)))
        sys.exit(1)


if __name__ == "__main__":
    main()
