# SPDX-License-Identifier: Apache-2.0
"""Native stacks held against gdb's own backtrace of the same core, and the Python frames that
`--native` merges into them held against the thread states' own stacks."""
import re
import subprocess


def base_name(name):
    """The bare function name both debuggers agree on: no namespaces or classes, no template
    arguments, no parameter list ("pybind11::gil_scoped_acquire::gil_scoped_acquire(...)" ->
    "gil_scoped_acquire"; "std::__invoke_impl<void, ...>" -> "__invoke_impl")."""
    if not name or name.startswith("??"):
        return "??"
    name = name.split("@")[0]  # a symbol version, "clock_nanosleep@@GLIBC_2.17"
    out, depth = [], 0
    for ch in name:  # drop <...> at any depth
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out)
    cut = name.find("(")
    while cut != -1 and name[:cut].endswith("operator"):
        cut = name.find("(", cut + 2)  # "operator()" keeps its own parentheses
    if cut != -1:
        name = name[:cut]
    return name.strip().split("::")[-1]


_THREAD = re.compile(r"^Thread \d+ \(.*?LWP (\d+)\)\)?")
_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.*)$")


def gdb_backtraces(exe, core, depth=5, sysroot=None):
    """{lwp: [function names of the innermost `depth` frames]} from gdb's `thread apply all bt`."""
    cmd = ["gdb", "-q", "-nx", "-batch"]
    if sysroot:
        cmd += ["-iex", "set sysroot " + sysroot]
    cmd += ["-ex", "set width 0", "-ex", "set print frame-arguments none", "-ex", "thread apply all bt %d" % depth, exe, core]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=300).stdout.decode(errors="replace")
    return parse_backtraces(out)


def parse_backtraces(out):
    """{lwp: [function names]} from the text of gdb's `thread apply all bt N` (set width 0, set
    print frame-arguments none): gdb_backtraces' own run, or gdb_oracle's (one gdb run per core)."""
    stacks, lwp = {}, None
    for line in out.splitlines():
        m = _THREAD.match(line)
        if m:
            lwp = int(m.group(1))
            stacks[lwp] = []
            continue
        m = _FRAME.match(line)
        if m and lwp is not None:
            rest = m.group(2)
            # "func (...) at file:line" / "func (...) from lib": the name ends before " (" at depth 0
            depth_angle, end = 0, len(rest)
            for i, ch in enumerate(rest):
                if ch == "<":
                    depth_angle += 1
                elif ch == ">" and depth_angle:
                    depth_angle -= 1
                elif rest.startswith(" (", i) and depth_angle == 0:
                    end = i
                    break
            stacks[lwp].append(rest[:end].strip())
    return stacks


def glibc_public(name):
    """glibc's internal alias of a function, its public name ("__GI___clone3" -> "clone3")."""
    if name.startswith("__GI_"):
        name = name[len("__GI_"):]
    return name.lstrip("_")


def compare_with_gdb(report, gdb_stacks, depth=5):
    """Differences between pytstates' native frames (report from `check --native --json`) and
    gdb's, by bare function name, for the innermost `depth` frames of every thread."""
    problems = []
    ours = {row["lwp"]: row["native_frames"] for row in report["threads"]}
    if set(ours) != set(gdb_stacks):
        problems.append("threads: pytstates %s, gdb %s" % (sorted(ours), sorted(gdb_stacks)))
    for lwp, theirs in gdb_stacks.items():
        frames = ours.get(lwp, [])
        mine = [base_name(f["function"] or "??") for f in frames][:depth]
        # gdb rebuilds a tail call only when it can resolve the call site's target (not through
        # some PLT calls): a tail-call frame pytstates shows may be one gdb leaves out.
        without_tail = [base_name(f["function"] or "??") for f in frames if not f.get("tail_call")][:depth]
        want = [base_name(f) for f in theirs[:depth]]
        # (glibc 2.41's libc6-dbg names clone3 by its internal alias, __GI___clone3)
        if [glibc_public(n) for n in want[:1]] in (["clone"], ["clone3"]) and mine[:1] == want[:1]:
            continue  # a thread being born: its new stack holds nothing to unwind, whatever gdb makes of it
        if mine != want and without_tail != want:
            problems.append("LWP %d: pytstates %s, gdb %s" % (lwp, mine, want))
    return problems


def check_python_merge(native_report, full_report, complete=True):
    """Differences between the Python frames --native put under eval-loop frames, in order, and
    each thread's own Python stack (full_report: tstates --json with enough --frames). complete=False:
    where symbols do not name every eval-loop frame, the innermost frames placed are the stack's own
    and the note counts those left over."""
    problems = []
    stacks = {}
    for rt in full_report["runtimes"]:
        for interp in rt["interpreters"]:
            for ts in interp["tstates"]:
                if ts["lwp"] is not None and ts["frames"]:
                    stacks[ts["lwp"]] = [(f["function"], f["file"], f["line"]) for f in ts["frames"]]
    for row in native_report["threads"]:
        merged = [(p["function"], p["file"], p["line"]) for f in row["native_frames"] for p in f["python"]]
        want = stacks.get(row["lwp"], [])
        left = "%d Python frame(s) could not be placed" % (len(want) - len(merged))
        if merged != want and (complete or merged != want[:len(merged)] or left not in row.get("native_end", "")):
            problems.append("LWP %d: merged %s, its thread state's stack %s" % (row["lwp"], merged, want))
        for f in row["native_frames"]:
            if f["python"] and f["function"] != "_PyEval_EvalFrameDefault":
                problems.append("LWP %d: Python frames under %s" % (row["lwp"], f["function"]))
        if complete and "could not be placed" in row.get("native_end", ""):
            problems.append("LWP %d: %s" % (row["lwp"], row["native_end"]))
    return problems
