# SPDX-License-Identifier: Apache-2.0
"""pytstates' commands inside real gdb (its module) and real lldb (its SB API plugin) on a core:
`py-tstates-check --json` as each debugger prints it."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import json_contract  # noqa: E402
import scenario  # noqa: E402

BEGIN, END = "<<<PYTSTATES-JSON", "PYTSTATES-JSON>>>"


def gdb_check(gdb_script, exe, core):
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex", "source " + gdb_script,
            "-ex", "echo " + BEGIN + "\\n", "-ex", "py-tstates-check --json", "-ex", "echo " + END + "\\n", exe, core]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300).stdout.decode(errors="replace")
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), out, re.S)
    if m is None:
        raise AssertionError("gdb printed no py-tstates-check --json:\n" + out[-3000:])
    # gdb's own warnings (a gcore of gdb: "Section .reg-xstate too small") come on the same stream
    return parse("\n".join(l for l in m.group(1).splitlines() if not l.startswith("warning: ")), out)


def lldb_check(plugin, exe, core):
    argv = [scenario.LLDB, "-b", "--core", core, exe, "-o", "plugin load " + plugin, "-o", "py-tstates-check --json"]
    out = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=300).stdout.decode(errors="replace")
    text = out[out.find("(lldb) py-tstates-check --json"):]
    if "{" not in text:
        raise AssertionError("lldb printed no py-tstates-check --json:\n" + out[-3000:])
    return parse(text[text.index("{"):text.rindex("}") + 1], out)


def parse(text, out):
    try:
        return json_contract.loads(text)
    except ValueError:
        raise AssertionError("not JSON:\n" + text[:1500] + "\n...\n" + text[-1500:])
