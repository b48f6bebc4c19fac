# SPDX-License-Identifier: Apache-2.0
"""scripts/bench's gdb figures for gdb's own bt with pytstates loaded (issue 42: bt with the frame
filter <= 1.2 x plain bt on the seed's crash core). In one gdb -batch each: gdb alone (no
pytstates) and gdb with pytstates, `bt` timed inside gdb (Python's perf_counter around
gdb.execute, the output kept in a string): the first bt (with pytstates: the view of the stop is
opened there, the analysis of the whole process), then the median of 20 more. Figures only."""
import os
import re
import statistics
import subprocess
import tempfile

TIMER = r'''
import gdb, time, statistics
def _once(command):
    t = time.perf_counter()
    out = gdb.execute(command, to_string=True)
    return time.perf_counter() - t, out
for _command in COMMANDS:
    _first, _out = _once(_command)
    _warm = statistics.median([_once(_command)[0] for _ in range(20)])
    print("BT-TIME %r first=%.6f warm=%.6f rows=%d python_rows=%d" % (_command, _first, _warm, _out.count("\n#") + 1,
                                                                     _out.count("(Python) ")))
'''


def _times(gdb_script, target, commands, with_pytstates, before=()):
    with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="pytstates-bt-timer-", delete=False) as f:
        f.write("COMMANDS = %r\n" % (list(commands),) + TIMER)
        timer = f.name
    try:
        argv = ["gdb", "-q", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
        if with_pytstates:
            argv += ["-ex", "source " + gdb_script]
        for c in before:
            argv += ["-ex", c]
        argv += ["-ex", "source " + timer] + list(target)
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600).stdout.decode(
            errors="replace")
    finally:
        os.unlink(timer)
    found = {m.group(1): (float(m.group(2)), float(m.group(3)), int(m.group(4)), int(m.group(5)))
             for m in re.finditer(r"BT-TIME '(.*)' first=([\d.]+) warm=([\d.]+) rows=(\d+) python_rows=(\d+)", out)}
    if len(found) != len(commands):
        raise RuntimeError("gdb printed no timing:\n" + out[-2000:])
    return found


def figures(label, gdb_script, target, before=()):
    """Prints bt's figures on one target: gdb alone, then with pytstates (filter on and off)."""
    alone = _times(gdb_script, target, ["bt"], False, before)["bt"]
    ours = _times(gdb_script, target, ["bt", "bt -no-filters"], True, before)
    bt, plain = ours["bt"], ours["bt -no-filters"]
    print("%s: bt, gdb alone: first %.1f ms, then %.1f ms (median of 20; %d frames)" % (label, alone[0] * 1e3, alone[1] * 1e3, alone[2]))
    print("%s: bt, pytstates loaded: first %.1f ms (opens the view of the stop), then %.1f ms (%d Python rows) = %.2f x gdb alone "
          "(goal <= 1.2 x)" % (label, bt[0] * 1e3, bt[1] * 1e3, bt[3], bt[1] / alone[1]))
    print("%s: bt -no-filters, pytstates loaded (printers only): %.1f ms = %.2f x gdb alone" % (label, plain[1] * 1e3, plain[1] / alone[1]))
    return bt[1] / alone[1]


def run(build, scenario):
    """The seed's crash core (kernel's core of scenario_seed_host svr2 crash), and a gcore of a
    Python program whose main thread sleeps three Python calls deep under Debian's python3.X."""
    gdb_script = os.path.join(build, "plugin", "gdb", "pytstates.gdb")
    exe = os.path.join(build, "tests", "scenarios", "findings", "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr2", "crash"], "crash")
    try:
        figures("seed's crash core", gdb_script, [exe, core])
    finally:
        scenario.cleanup(core)
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gdb", "bt_program.py")
    facts, core = scenario.take_core([scenario.PYTHON, os.path.normpath(program), "pause"], "gcore")
    try:
        figures("python%s core (tests/gdb/bt_program.py)" % scenario.PYTHON_VERSION, gdb_script, [scenario.PYTHON, core])
    finally:
        scenario.cleanup(core)
