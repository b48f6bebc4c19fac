# SPDX-License-Identifier: Apache-2.0
"""gdb and lldb run in batch mode, and a command's output (and its JSON) cut out of theirs.
gdb: each command between `echo` markers (marked, between); lldb: each command's output follows
the line lldb echoes for it, "(lldb) COMMAND" (sections)."""
import json
import re
import subprocess

import json_contract
import scenario
from findings_cases import expect

BEGIN, END = "<<<PYTSTATES", "PYTSTATES>>>"

# Debian's lldb-14 prints Python tracebacks of its own (its script interpreter is broken); they
# are not ours, and are dropped before parsing.
NOISE = re.compile(r"^(Traceback \(most recent call last\):|  File \"<string>\".*|\w*Error: .*run_one_line.*|"
                   r"ModuleNotFoundError: No module named 'lldb.embedded_interpreter')$")


def gdb(gdb_script, target_args, commands, timeout=120, pagination=True):
    """gdb -batch -nx with the module sourced and each command an -ex: (exit status, output)."""
    argv = ["gdb", "-q", "-batch", "-nx"] + ([] if pagination else ["-ex", "set pagination off"]) + ["-ex", "source " + gdb_script]
    for c in commands:
        argv += ["-ex", c]
    out = subprocess.run(argv + target_args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=timeout)
    return out.returncode, out.stdout.decode(errors="replace")


def lldb(plugin, target_args, commands, batch=True, timeout=120):
    """lldb with the plugin loaded and each command an -o: (exit status, output lines without
    lldb's own noise). lldb -b stops at a launched process's crash; without it, the commands run
    on and a last `quit` ends it."""
    argv = [scenario.LLDB] + (["-b"] if batch else []) + ["-o", "plugin load " + plugin]
    for c in commands:
        argv += ["-o", c]
    # The target last: it may end with "-- PROGRAM ARGS".
    out = subprocess.run(argv + target_args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return out.returncode, [l for l in out.stdout.decode(errors="replace").splitlines() if not NOISE.match(l)]


def select_function(name):
    """A gdb command selecting the innermost frame of the function `name` itself. gdb 16's `frame
    function NAME` stays where it is when NAME's frame shares its pc with frames inlined into it
    (Debian 13's take_gil, under the atomics it crashed in)."""
    return ('python (lambda up: up(up, gdb.newest_frame()))'
            '(lambda up, f: f.select() if f.name() == "%s" else up(up, f.older()))' % name)


def marked(tag, command):
    """gdb commands that run `command` between markers named `tag`."""
    return ["echo " + BEGIN + tag + "\\n", command, "echo " + tag + END + "\\n"]


def between(text, tag):
    """The output between the markers named `tag`."""
    m = re.search(re.escape(BEGIN + tag) + r"\n(.*?)" + re.escape(tag + END), text, re.S)
    expect(m is not None, "markers %s not found in gdb output:\n%s" % (tag, text[-3000:]))
    return m.group(1)


def sections(lines):
    """lldb: the output of each command, keyed by the command line lldb echoed."""
    out, current = {}, None
    for line in lines:
        if NOISE.match(line):
            continue
        if line.startswith("(lldb) "):
            current = line[len("(lldb) "):]
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def as_json(text):
    """The JSON object that opens a line of `text` (gdb 16's own warnings, such as "Section
    `.reg-xstate/N' in core file too small" on a gcore core, or the program's lines may come
    first); what follows the object is not read."""
    start = 0 if text.startswith("{") else text.find("\n{") + 1
    expect(start > 0 or text.startswith("{"), "no JSON object in:\n" + text[-3000:])
    return json_contract.check(json.JSONDecoder().raw_decode(text[start:])[0], "a debugger's command")


def json_after(text, marker):
    """The JSON object printed after the echoed command `marker`."""
    expect(marker in text, "%s not found in:\n%s" % (marker, text[-3000:]))
    return as_json(text[text.index(marker):])


def core_json(debugger, loads, exe, core, command, timeout=180):
    """The JSON report of one command (a --json one) run in gdb or lldb on `core` of `exe`;
    `loads` is the gdb script or the lldb plugin."""
    if debugger == "gdb":
        _, out = gdb(loads, [exe, core], marked("json", command), timeout=timeout)
        return as_json(between(out, "json"))
    _, lines = lldb(loads, ["--core", core, exe], [command], timeout=timeout)
    out = sections(lines)
    expect(command in out, "lldb did not run %s:\n%s" % (command, "\n".join(lines)[-3000:]))
    return as_json(out[command])
