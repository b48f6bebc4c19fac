#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Python files by their whole paths in the text (as py-bt and pystack show them), cut at the front
only where the line would be wider than the text's width (tests/lib/long_paths.py): read live,
unwrapped (a pipe, no --width) the waiting frame names its file whole, as the program's code
object does; at --width 80 every line fits and the path is "…/" and the last directories that
fit, the file name whole."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import long_paths  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    args = p.parse_args()
    with long_paths.deep_program() as (proc, facts):
        pid = str(proc.pid)
        status, plain, err = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", pid])
        expect(status == 0, "tstates --pid: exit 0 (%d) %s" % (status, err.strip()))
        status, narrow, err = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", pid, "--width", "80"])
        expect(status == 0, "tstates --pid --width 80: exit 0 (%d) %s" % (status, err.strip()))
    print("unwrapped: " + long_paths.check_frame(plain, facts, None, "pipe").strip())
    print("--width 80: " + long_paths.check_frame(narrow, facts, 80, "--width 80").strip())
    print("PASS findings long-paths")


if __name__ == "__main__":
    main()
