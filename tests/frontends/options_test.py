#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One option table (commands/options.cpp) for every front end: the CLI's `--help`, gdb's and
lldb's `help py-tstates` (and pybind-internals, py-tstates-check) name the same report options for
each command, and lldb's usage line lists them; a value the table refuses (`--frames -5`) or an
option of another command is the same one line in the CLI (exit status 2) and in gdb and lldb (on a
real core); the help says which CPython versions --tasks reads as docs/usage.md does (3.9-3.15)."""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from debugger_batch import between, gdb, lldb, marked, sections  # noqa: E402
from findings_cases import expect  # noqa: E402

COMMANDS = (("tstates", "py-tstates"), ("internals", "pybind-internals"), ("check", "py-tstates-check"))
# The CLI's own: what the target is and how it is read (plugin/engine/cli_main.cpp); a debugger has its target.
TARGET_OPTIONS = {"--help", "--core", "--exe", "--sysroot", "--debug-dir", "--pid", "--no-stop", "--no-dwarf", "--offline",
                  "--no-cache", "--max-decoded"}
LONG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def options_in(text):
    return set(LONG.findall(text))


def cli_help(pytstates, command):
    out = subprocess.run([pytstates, command, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    expect(out.returncode == 0, "pytstates %s --help: exit %d" % (command, out.returncode))
    text = out.stdout.decode()
    # The options' lines only: the footer names a few options in its prose.
    return options_in(text[text.index("Options:"):text.index("TARGET is")]) - TARGET_OPTIONS


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script", required=True)
    p.add_argument("--plugin", required=True)
    args = p.parse_args()

    gdb_commands = []
    for _, name in COMMANDS:
        gdb_commands += marked(name, "help " + name)
    _, gdb_out = gdb(args.gdb_script, [], gdb_commands)
    _, lines = lldb(args.plugin, [], ["help " + name for _, name in COMMANDS])
    lldb_out = sections(lines)
    for command, name in COMMANDS:
        cli = cli_help(args.pytstates, command)
        in_gdb = options_in(between(gdb_out, name))
        in_lldb = options_in(lldb_out.get("help " + name, ""))
        expect(cli and cli == in_gdb == in_lldb, "%s: the CLI's --help %s, gdb's help %s, lldb's help %s" % (
            command, sorted(cli), sorted(in_gdb), sorted(in_lldb)))
        usage = [l for l in between(gdb_out, name).splitlines() if l.startswith("Usage: " + name + " [")]
        expect(usage and options_in(usage[0]) == cli, "%s: gdb's usage line names every option: %s" % (name, usage))
        expect(re.search(r"Syntax: %s \[-j\|--json\]" % name, lldb_out["help " + name]),
               "lldb's usage line for %s from the table:\n%s" % (name, lldb_out["help " + name]))
        print("%s: %d options in the CLI's --help, gdb's and lldb's help: %s" % (command, len(cli), " ".join(sorted(cli))))
    expect("--frames" not in cli_help(args.pytstates, "internals") and "--types" in cli_help(args.pytstates, "internals"),
           "internals takes --types, not --frames")
    tasks = [l for l in between(gdb_out, "py-tstates").splitlines() if l.strip().startswith("--tasks")]
    expect(tasks and "3.9-3.15" in tasks[0] and "so far" not in tasks[0], "--tasks' help names the versions read: %s" % tasks)

    refused = {"--frames -5": "--frames needs a number of frames, 0 or more, got '-5'",
               "--frames=-1": "--frames needs a number of frames, 0 or more, got '-1'",
               "--types": "'--types' is not an option of check"}
    for typed, line in refused.items():
        out = subprocess.run([args.pytstates, "check", "/nonexistent-core"] + typed.split(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=30)
        err = out.stderr.decode()
        expect(out.returncode == 2 and err.count("\n") == 1 and err.startswith("pytstates: " + line) and not out.stdout,
               "CLI check %s: exit 2 and one line: %d %r" % (typed, out.returncode, err))
    # In the debuggers, on a real core: the same line, no traceback.
    facts, core = scenario.take_core(["/bin/sh", "-c", 'echo "FACTS {}"; echo READY; exec sleep 100'], "gcore")
    try:
        gdb_commands = []
        for i, typed in enumerate(refused):
            gdb_commands += marked("r%d" % i, "py-tstates-check " + typed)
        _, gdb_out = gdb(args.gdb_script, ["/bin/sleep", core], gdb_commands)
        lldb_out = {}
        for typed in refused:  # lldb -b stops at a command's error: one lldb each
            _, lines = lldb(args.plugin, ["--core", core, "/bin/sleep"], ["py-tstates-check " + typed])
            lldb_out.update(sections(lines))
        for i, (typed, line) in enumerate(refused.items()):
            said = between(gdb_out, "r%d" % i)
            expect(line in said and "Traceback" not in said and said.strip().count("\n") == 0,
                   "gdb py-tstates-check %s: one line %r" % (typed, said))
            said = lldb_out.get("py-tstates-check " + typed, "")
            expect(line in said and said.strip().count("\n") == 0, "lldb py-tstates-check %s: one line %r" % (typed, said))
            print("%s: refused in the CLI, gdb and lldb: %s" % (typed, line))
    finally:
        scenario.cleanup(core)
    print("PASS options")


if __name__ == "__main__":
    main()
