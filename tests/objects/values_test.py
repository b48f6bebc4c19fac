#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""--locals' reprs (symbols/cpython/object_repr) of values_program.py's locals: pystack's and
py-spy's own local-variable tests' values and issue 42's (surrogates, quotes, sets, cycles, big
ints, bounds), on a gcore'd core or the live process.

Usage: values_test.py --pytstates BIN [--python314-dir D] [--python315-dir D] [--no-dwarf] KIND INTERPRETER
  KIND: core, live; INTERPRETER as objects_test.py's.
Truth: the program's repr() of each local, printed before the core (and which repr CPython runs
for it: its own, or a Python-level __repr__ that only running it could print); for debian's
cores also gdb's py-locals (libpython.py, auto-loaded from python3.11-dbg), for the values where
libpython.py agrees with the program (where it does not, that is libpython.py's, and counted).
Exit 0 when all agree, 1 otherwise, 77 (not a pass) when the interpreter is missing.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import json_contract  # noqa: E402
import locals_facts  # noqa: E402
import scenario  # noqa: E402
from objects_test import Missing, interpreter  # noqa: E402

PROGRAM = os.path.join(HERE, "values_program.py")
MAX_BYTES = 1024  # kMaxLocalText, libpython.py's MAX_OUTPUT_LEN
MAX_DEPTH = 32    # ReprLimits::maxDepth


def run(argv):
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=200)
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")


def frames_by_function(report):
    return {f["function"]: f for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"]
            for f in t["frames"]}


def expected_text(name, fact):
    """What --locals must print for the local: the program's repr where CPython's own repr runs and
    fits the bounds; else what a reader of memory prints. (text, exact): exact False means `text`
    is the whole repr that ours must be a bounded prefix of."""
    r = fact["repr"]
    if not fact["builtin"]:
        if fact.get("memory_repr"):
            return fact["memory_repr"], True
        return "<%s object at %s>" % (fact["type"], fact["id"]), True
    if name == "deep":  # 40 nested lists: the 33rd is cut to reprlib's marker
        return "[" * MAX_DEPTH + "[...]" + "]" * MAX_DEPTH, True
    if len(r.encode("utf-8", "surrogatepass")) <= MAX_BYTES:
        return r, True
    return r, False


def value_problems(frame_name, facts, frame):
    problems, checked = [], 0
    mine = {l["name"]: l for l in frame["locals"]}
    for name, fact in facts.items():
        local = mine.get(name)
        if local is None:
            problems.append("%s: no local %s" % (frame_name, name))
            continue
        checked += 1
        want, exact = expected_text(name, fact)
        value = local["value"]
        if not fact["builtin"] and fact["type"] == "Custom":
            if value is not None:
                problems.append("%s.%s: a Python-level __repr__, yet value %r" % (frame_name, name, value))
            continue
        if value is None:
            problems.append("%s.%s: value null, the program's repr %s" % (frame_name, name, want[:200]))
            continue
        if exact:
            if value != want:
                problems.append("%s.%s: the program says %s, pytstates %s" % (frame_name, name, want[:300], value[:300]))
        elif not (value.endswith("...") and len(value.encode()) <= MAX_BYTES and want.startswith(value[:-3])
                  and len(value.encode()) > MAX_BYTES - 8):
            problems.append("%s.%s: not the first %d bytes of the program's repr with '...': %r" % (
                frame_name, name, MAX_BYTES, value[:200]))
    return problems, checked


def text_problems(text, facts_by_frame):
    """The text form: `name = repr` under each frame, for the ASCII reprs (the rest goes through
    the terminal's escaping: commands/render/text_encoding)."""
    problems, checked = [], 0
    for frame_name, facts in facts_by_frame.items():
        m = re.search(r"#\d+ %s \([^)]*\)\n((?:\s{8,}.*\n)+)" % frame_name, text)
        if not m:
            problems.append("text: no %s frame with locals" % frame_name)
            continue
        block = m.group(1)
        for name, fact in facts.items():
            want, exact = expected_text(name, fact)
            if not exact or not want.isascii() or not fact["builtin"]:
                continue
            checked += 1
            if ("  %s = %s\n" % (name, want)) not in block:
                problems.append("text: no line '%s = %s' under %s" % (name, want[:200], frame_name))
    return problems, checked


def gdb_locals(core, executable):
    """py-locals of the three frames (libpython.py): {frame: {name: text}}."""
    out = subprocess.run(locals_facts.GDB + ["-iex", "add-auto-load-safe-path /usr",
                                             "-ex", "py-locals", "-ex", "py-up", "-ex", "py-locals", "-ex", "py-up",
                                             "-ex", "py-locals", executable, core],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=200)
    text = out.stdout.decode(errors="replace")
    said, current = {}, None
    for line in text.splitlines():
        m = re.search(r"in (\w+) \(", line)
        if "Locals for " in line:
            current = line.split("Locals for ", 1)[1].strip()
        elif m and line.startswith("#") and m.group(1) in ("issue_values", "pyspy_values", "pystack_values"):
            current = m.group(1)
        m = re.match(r"^(\w+) = (.*)$", line)
        if m and current:
            said.setdefault(current, {})[m.group(1)] = m.group(2)
    return said, text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pytstates", required=True)
    ap.add_argument("--python314-dir", default="")
    ap.add_argument("--python315-dir", default="")
    ap.add_argument("--no-dwarf", action="store_true")
    ap.add_argument("kind", choices=["core", "live"])
    ap.add_argument("interpreter")
    args = ap.parse_args()
    try:
        argv, env = interpreter(args.interpreter, args)
    except Missing as e:
        print("NOT RUN (not a pass): %s" % e)
        return 77
    work = tempfile.mkdtemp(prefix="pytstates-values-")
    try:
        return check(args, argv, env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check(args, argv, env, work):
    proc = subprocess.Popen(argv + [PROGRAM], stdout=subprocess.PIPE, env=env, start_new_session=True)
    problems = []
    extra = ["--no-dwarf"] if args.no_dwarf else []
    try:
        facts = scenario.read_facts(proc, time.monotonic() + 60, who="values_program.py")["frames"]
        if args.kind == "core":
            target = ["--core", scenario.gcore(proc.pid, os.path.join(work, "core"))]
        else:
            target = ["--pid", str(proc.pid)]
        common = [args.pytstates, "tstates"] + target + ["--locals", "--frames", "8", "--width", "0"] + extra
        status, out_json, err = run(common + ["--json"])
        if status not in (0, 1):
            problems.append("--json exited %d: %s" % (status, err.strip()))
        status, out_text, err = run(common)
        if status not in (0, 1):
            problems.append("text exited %d: %s" % (status, err.strip()))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    checked = 0
    try:
        report = json_contract.loads(out_json, "pytstates tstates --locals --json")
        frames = frames_by_function(report)
        for frame_name, frame_facts in facts.items():
            if frame_name not in frames:
                problems.append("no frame %s in the report" % frame_name)
                continue
            p, n = value_problems(frame_name, frame_facts, frames[frame_name])
            problems += p
            checked += n
    except ValueError as e:
        problems.append("--json is no JSON (%s): %r" % (e, out_json[:500]))
    p, text_checked = text_problems(out_text, facts)
    problems += p
    summary = "%s %s%s: %d locals' values checked against the program's repr() (JSON), %d text lines" % (
        args.interpreter, args.kind, " --no-dwarf" if args.no_dwarf else "", checked, text_checked)
    if args.interpreter == "debian" and args.kind == "core" and not problems:
        said, gdb_text = gdb_locals(target[1], scenario.PYTHON)
        agreed, libpython_wrong = 0, []
        for frame_name, values in said.items():
            mine = {l["name"]: l["value"] for l in frames.get(frame_name, {"locals": []})["locals"]}
            for name, text in values.items():
                fact = facts.get(frame_name, {}).get(name)
                if fact is None or expected_text(name, fact) != (fact["repr"], True) or mine.get(name) is None \
                        or text.endswith("...(truncated)"):
                    continue  # a Python-level __repr__, or a repr past our bounds
                if text != fact["repr"]:
                    libpython_wrong.append("%s.%s" % (frame_name, name))
                    continue
                agreed += 1
                if mine[name] != text:
                    problems.append("gdb's py-locals says %s.%s = %s, pytstates %s" % (frame_name, name, text, mine[name]))
        if agreed < 20:
            problems.append("only %d values of gdb's py-locals compared; gdb printed:\n%s" % (agreed, gdb_text[-3000:]))
        summary += "; gdb's py-locals (libpython.py): %d values agree with the program and pytstates, %d where " \
                   "libpython.py differs from the program's repr() (not compared: %s)" % (
                       agreed, len(libpython_wrong), ", ".join(libpython_wrong))
    print(summary)
    for p in problems:
        print("DIFFERS: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
