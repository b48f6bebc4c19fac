# SPDX-License-Identifier: Apache-2.0
"""--locals held against tests/objects/objects_program.py's own account of waiter's locals
(FACTS["waiter_reprs"]: each value as --locals shows it) and against gdb's py-locals."""
import os
import re
import subprocess

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "objects", "objects_program.py")


def waiter_frame(report):
    """The waiter frame of the JSON report (tstates/check --locals --json)."""
    for runtime in report["runtimes"]:
        for interp in runtime["interpreters"]:
            for ts in interp["tstates"]:
                for f in ts["frames"]:
                    if f["function"] == "waiter":
                        return f
    return None


def all_frames(report):
    """Every thread state's frame of the report, with its locals."""
    return [f for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"] for f in t["frames"]]


def json_problems(report, facts):
    """What differs between the report's waiter locals and the program's; [] when they agree.
    Every frame carries "locals"; a value CPython's own repr prints (scalars, containers) is that
    repr, anything else has value null and the type and address the program's <TYPE object at
    0x...> names."""
    problems = []
    frames = [f for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"] for f in t["frames"]]
    if not frames or any("locals" not in f for f in frames):
        problems.append("not every frame has locals: %r" % frames)
    frame = waiter_frame(report)
    if frame is None:
        return problems + ["no waiter frame"]
    mine = {}
    for l in frame["locals"]:
        mine[l["name"]] = l["value"] if l["value"] is not None else "<%s object at %s>" % (l["type"], l["address"])
    if mine != facts["waiter_reprs"]:
        problems.append("waiter's locals: the program says %r, pytstates %r" % (facts["waiter_reprs"], mine))
    if "waiter_position" in facts:  # 3.11+: (line, end line, column, end column) as co_positions() says
        ours = [frame.get(k) for k in ("line", "end_line", "column", "end_column")]
        if ours != facts["waiter_position"]:
            problems.append("waiter's position: the program says %r, pytstates %r" % (facts["waiter_position"], ours))
    args = [l["name"] for l in frame["locals"] if l["kind"] == "arg"]
    if args != ["arg_text", "arg_number", "flag", "rest", "extra"]:
        problems.append("waiter's arguments (first, in co_varnames order): %r" % args)
    return problems


def text_problems(text, facts):
    """The text form: Arguments:/Locals: under the waiter frame, one `name = value` line each."""
    problems = []
    m = re.search(r"#\d+ waiter \([^)]*\)\n((?:\s{8,}.*\n)+)", text)
    if not m:
        return ["no waiter frame with locals in:\n" + text[-2000:]]
    block = m.group(1)
    for heading in ("Arguments:", "Locals:"):
        if heading not in block:
            problems.append("no %s under waiter:\n%s" % (heading, block))
    for name, value in facts["waiter_reprs"].items():
        if "\n              %s = %s\n" % (name, value) not in "\n" + block and ("  %s = %s\n" % (name, value)) not in block:
            problems.append("no line '%s = %s' under waiter:\n%s" % (name, value, block))
    return problems


def gdb_py_locals(gdb_output):
    """name -> value of gdb's `py-locals` for waiter ("Locals for waiter" section)."""
    values, inside = {}, False
    for line in gdb_output.splitlines():
        if line.startswith("Locals for "):
            inside = line == "Locals for waiter"
            continue
        m = re.match(r"^(\w+) = (.*)$", line)
        if m and inside:
            values[m.group(1)] = m.group(2)
    return values


def gdb_problems(report, py_locals, reading="gdb's py-locals"):
    """gdb's locals of waiter (py-locals, CPython's libpython gdb script, or where that cannot
    read the frame, gdb_frame_locals.py's reading through CPython's DWARF: `reading` names which)
    against the report, for the values both give as literals (py-locals shows floats as
    <float at remote ...>: not compared). [] when they agree; a gdb that shows no locals is a
    problem too."""
    if not py_locals:
        return ["%s printed nothing for waiter" % reading]
    frame = waiter_frame(report) or {"locals": []}
    mine = {l["name"]: l["value"] for l in frame["locals"]}
    problems, compared = [], 0
    for name, value in py_locals.items():
        if value.startswith("<") or mine.get(name) is None:
            continue
        compared += 1
        if mine[name] != value:
            problems.append("%s says %s = %s, pytstates %s" % (reading, name, value, mine[name]))
    if compared < 4:
        problems.append("only %d of %s compared: %r" % (compared, reading, py_locals))
    return problems


GDB = ["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
FRAME_LOCALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gdb_frame_locals.py")
# What libpython.py says where it cannot read the frames (Debian 13's python3.13: the `frame` of
# _PyEval_EvalFrameDefault has no location its DWARF gives).
UNREADABLE = ("unable to read python frame information", "Unable to find an older python frame",
              "Unable to read information on python frame", "Unable to locate python frame")


def gdb_py_locals_output(core, executable):
    """What gdb prints for py-locals of waiter, the Python frame above snooze (Debian's python3.X:
    its libpython gdb script is auto-loaded from python3.X-dbg)."""
    out = subprocess.run(GDB + ["-iex", "add-auto-load-safe-path /usr", "-ex", "py-up", "-ex", "py-up", "-ex", "py-locals",
                                executable, core], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    return out.stdout.decode(errors="replace")


def gdb_dwarf_locals_output(core, executable):
    """What gdb prints for waiter's locals read by gdb_frame_locals.py through CPython's DWARF
    (no libpython.py: -nx, auto-loading off)."""
    out = subprocess.run(GDB + ["-iex", "set auto-load python-scripts off", "-ex", "source " + FRAME_LOCALS,
                                "-ex", "py-dwarf-locals waiter", executable, core],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    return out.stdout.decode(errors="replace")


def gdb_waiter_locals(core, executable, py_locals_output=None):
    """gdb's account of waiter's locals: (name -> value, which reading gave them, all gdb printed).
    py-locals first (its output given, or gdb run for it); where it shows no locals for waiter,
    gdb_frame_locals.py in gdb on the same core, with what py-locals said instead."""
    said_text = gdb_py_locals_output(core, executable) if py_locals_output is None else py_locals_output
    said = gdb_py_locals(said_text)
    if said:
        return said, "gdb's py-locals (libpython.py)", said_text
    why = [l.strip() for l in said_text.splitlines() if any(u in l for u in UNREADABLE)]
    text = gdb_dwarf_locals_output(core, executable)
    reading = "gdb's Python API through CPython's DWARF (gdb_frame_locals.py; py-locals printed no locals for waiter%s)" % (
        ": " + " / ".join(dict.fromkeys(why)) if why else "")
    return gdb_py_locals(text), reading, said_text + text
