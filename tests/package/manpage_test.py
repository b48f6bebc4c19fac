#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The man page (packaging/pytstates.1) and the CLI's own help stay in step: every option any
command's --help lists is in the page, and every command."""
import re
import subprocess
import sys

pytstates, page = sys.argv[1], sys.argv[2]
text = open(page).read().replace("\\-", "-")
missing = []
for command in ("tstates", "internals", "check"):
    if "B pytstates " + command not in text:
        missing.append("the command " + command)
    helptext = subprocess.run([pytstates, command, "--help"], stdout=subprocess.PIPE, check=True).stdout.decode()
    for option in sorted(set(re.findall(r"(--[a-z][a-z-]+)", helptext))):
        if option not in text:
            missing.append("%s (from `pytstates %s --help`)" % (option, command))
if missing:
    print("FAIL: the man page lacks " + ", ".join(missing))
    sys.exit(1)
print("PASS: every command and option of the CLI's help is in the man page")
