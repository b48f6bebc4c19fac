#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every string the report reads from a target goes to the terminal escaped, and to the JSON whole.
hostile_names_program.py names everything the report prints with ESC, U+009B (a CSI), U+202E, NUL,
BEL, BS and DEL: two deadlocked threads (their names, their function, its file, its arguments and
locals, the lock's name in the waiting frame, the holder's name in its with-block), an asyncio task
and its coroutine, and the executable and script paths (no NUL there: a path cannot hold one).
`check --tasks --locals --native` on a gcore core and on the live process: the text holds no
control character, no C1 character and no bidirectional override, and shows each name with them
as \\xNN / \\uNNNN; the JSON decodes to the very names."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
H = "\x1b[2J\u009b2J\u202e\x00\x07\x08\x7f"  # as hostile_names_program.py's
SHOWN = "\\x1b[2J\\u009b2J\\u202e\\x00\\x07\\x08\\x7f"  # as text_encoding.h's shown() writes it
PATH_H = H.replace("\x00", "")  # a path cannot hold NUL
PATH_SHOWN = SHOWN.replace("\\x00", "")
ARGS = ["check", "--tasks", "--locals", "--native", "--width", "0"]


def obeyed(text):
    """The characters of text a terminal would obey rather than show (text_encoding.h's list)."""
    def bad(c):
        o = ord(c)
        return (o < 0x20 and c != "\n") or 0x7f <= o <= 0x9f or o == 0x061c or o in (0x200e, 0x200f) \
            or 0x202a <= o <= 0x202e or 0x2066 <= o <= 0x2069
    return sorted({"U+%04X" % ord(c) for c in text if bad(c)})


def check(pytstates, target, facts, what):
    out = subprocess.run([pytstates] + ARGS + ["--color", "never"] + target, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=scenario.PYTSTATES_TIMEOUT, env=scenario.offline_env())
    expect(out.returncode == 1, "%s: a deadlock, exit 1 (got %d): %s" % (what, out.returncode, out.stderr[-2000:]))
    text = out.stdout.decode("utf-8")  # strictly: nothing ill-formed reaches the terminal
    expect(not obeyed(text), "%s: the text holds characters a terminal obeys %s:\n%s" % (what, obeyed(text), text[:6000]))
    for name in ("thrA", "thrB", "loop", "task", "coro", "func", "/srv/file", "/srv/async", "first", "held", "wanted",
                 "note"):
        expect(name + SHOWN in text, "%s: %r + the hostile characters, escaped, in the text:\n%s" % (what, name, text[:6000]))
    # The waiting frame names the lock by its first local holding it: the argument `second`; the
    # holder's with-block by `first`.
    expect(repr("val" + H) in text, "%s: the str local's value as Python's repr() escapes it:\n%s" % (what, text[:6000]))
    lock_name = "`second%s`" % SHOWN
    table = text[text.index("OS THREADS"):]
    hang = text[:text.index("FINDINGS")]
    expect(lock_name in table and lock_name in hang,
           "%s: the lock's python_name escaped in the thread table and the HANG:\n%s" % (what, text[:6000]))
    expect("as `first%s`" % SHOWN in hang, "%s: the holder's name in its with-block, escaped:\n%s" % (what, hang))
    expect("bin" + PATH_SHOWN in text and "scripts" + PATH_SHOWN in text,
           "%s: the executable's and the script's directories, escaped:\n%s" % (what, text[:3000]))

    status, r, err = scenario.run_pytstates(pytstates, ARGS + ["--json"] + target)
    threads = {t["lwp"]: t for t in r["threads"]}
    for lwp, name in facts["threads"].items():
        expect(threads[int(lwp)].get("name") == name, "%s: LWP %s's name whole in the JSON" % (what, lwp), threads.get(int(lwp)))
    for lwp in facts["deadlocked"]:
        b = threads[lwp]["blocked_on"]
        expect(b["python_name"] == "second" + H and b.get("holder_python_name") == "first" + H,
               "%s: LWP %d's python_name and holder_python_name whole" % (what, lwp), b)
    frames = [f for rt in r["runtimes"] for i in rt["interpreters"] for t in i["tstates"] if t["lwp"] in facts["deadlocked"]
              for f in t["frames"]]
    mine = [f for f in frames if f["function"] == "func" + H and f["file"] == "/srv/file" + H + ".py"]
    expect(len(mine) == 2, "%s: both threads' frame with the hostile function and file" % what, frames)
    names = {l["name"]: l for l in mine[0]["locals"]}
    expect(set(names) >= {n + H for n in ("first", "second", "note", "held", "wanted")} and names["note" + H]["value"] == repr("val" + H),
           "%s: every argument's and local's name whole, and the string's value as Python's repr() gives it" % what,
           mine[0]["locals"])
    tasks = [t for loop in r.get("event_loops", []) for t in loop["tasks"] if t["name"] == "task" + H]
    expect(tasks and any(f["function"] == "coro" + H and f["file"] == "/srv/async" + H + ".py" for f in tasks[0]["frames"]),
           "%s: the task's name and its coroutine's frame whole" % what, r.get("event_loops"))
    expect(r["target"]["executable"] == facts["executable"], "%s: the executable's path whole" % what, r["target"])
    print("%s: text escaped (%d lines, no control character), JSON whole: e.g. %s" % (
        what, text.count("\n"), [l.strip() for l in table.splitlines() if "second" in l][:1]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="pytstates-hostile-")
    try:
        bindir, scriptdir = os.path.join(tmp, "bin" + PATH_H), os.path.join(tmp, "scripts" + PATH_H)
        os.makedirs(bindir)
        os.makedirs(scriptdir)
        python = os.path.join(bindir, os.path.basename(scenario.PYTHON))
        shutil.copy2(scenario.PYTHON, python)
        shutil.copy2(os.path.join(HERE, "hostile_names_program.py"), scriptdir)
        shutil.copy2(os.path.join(HERE, "..", "scenarios", "live", "pause.py"), scriptdir)
        argv = [python, os.path.join(scriptdir, "hostile_names_program.py")]
        facts, core = scenario.take_core(argv, "gcore")
        try:
            check(args.pytstates, ["--core", core], facts, "gcore core")
        finally:
            scenario.cleanup(core)
        with scenario.running(argv) as (proc, facts):
            check(args.pytstates, ["--pid", str(proc.pid)], facts, "live")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS hostile names")


if __name__ == "__main__":
    main()
