# SPDX-License-Identifier: Apache-2.0
"""scripts/bench's gdb figures for gdb's own bt with pytstates loaded (issue 42: bt with the frame
filter <= 1.2 x plain bt on the seed's crash core). `bt` is timed inside gdb (Python's perf_counter
around gdb.execute, the output kept in a string): the first bt of gdb alone and of gdb with
pytstates (the view of the stop, the analysis of the whole process, is opened there), then in one
session bt with pytstates' frame filter and printers enabled and disabled in turn, so that a loaded
machine's drift falls on both alike, as gdb's CPU time (time.process_time: a 2-core machine shared
by other builds moves wall times of a few ms by more than the difference measured). Figures only."""
import os
import re
import statistics
import subprocess
import tempfile

TIMER = r'''
import gdb, time, statistics
def _once(command, clock=time.perf_counter):
    t = clock()
    out = gdb.execute(command, to_string=True)
    return clock() - t, out
def _ours(on):
    for what in ("frame-filter global pytstates", "pretty-printer progspace pytstates"):
        gdb.execute(("enable " if on else "disable ") + what, to_string=True)
_first, _out = _once("bt")
print("BT-FIRST %.6f rows=%d python_rows=%d" % (_first, _out.count("\n#") + 1, _out.count("(Python) ")))
if WITH_PYTSTATES:
    _on, _off, _plain = [], [], []
    for _ in range(RUNS):  # interleaved: a loaded machine's drift falls on both alike
        _ours(False)
        _off.append(_once("bt", time.process_time)[0])
        _ours(True)
        _on.append(_once("bt", time.process_time)[0])
        _plain.append(_once("bt -no-filters", time.process_time)[0])
    print("BT-WARM on=%.6f off=%.6f plain=%.6f" % (statistics.median(_on), statistics.median(_off), statistics.median(_plain)))
'''


def _gdb(gdb_script, target, with_pytstates, runs):
    with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="pytstates-bt-timer-", delete=False) as f:
        f.write("WITH_PYTSTATES = %r\nRUNS = %d\n" % (with_pytstates, runs) + TIMER)
        timer = f.name
    try:
        argv = ["gdb", "-q", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
        if with_pytstates:
            argv += ["-ex", "source " + gdb_script]
        argv += ["-ex", "source " + timer] + list(target)
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900).stdout.decode(
            errors="replace")
    finally:
        os.unlink(timer)
    first = re.search(r"BT-FIRST ([\d.]+) rows=(\d+) python_rows=(\d+)", out)
    warm = re.search(r"BT-WARM on=([\d.]+) off=([\d.]+) plain=([\d.]+)", out)
    if first is None or (with_pytstates and warm is None):
        raise RuntimeError("gdb printed no timing:\n" + out[-2000:])
    return first, warm


def figures(label, gdb_script, target, runs=50):
    """bt's figures on one target: the first bt of gdb alone and of gdb with pytstates (which opens
    the view there), then, in the session with pytstates, bt with pytstates' filter and printers
    disabled and enabled in turn (median of `runs` each)."""
    alone, _ = _gdb(gdb_script, target, False, runs)
    first, warm = _gdb(gdb_script, target, True, runs)
    on, off, plain = (float(warm.group(i)) for i in (1, 2, 3))
    print("%s: first bt, gdb alone %.0f ms; with pytstates %.0f ms (the view of the stop is opened there; %s frames, %s Python rows)" % (
        label, float(alone.group(1)) * 1e3, float(first.group(1)) * 1e3, first.group(2), first.group(3)))
    print("%s: bt %.2f ms of gdb's CPU with pytstates' filter and printers, %.2f ms without = %.2f x (goal <= 1.2 x); "
          "bt -no-filters %.2f ms (median of %d, interleaved)" % (label, on * 1e3, off * 1e3, on / off, plain * 1e3, runs))
    return on / off


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
