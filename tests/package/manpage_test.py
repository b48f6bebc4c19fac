#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The man page (packaging/pytstates.1.in, as the build fills it in) and the CLI's own help stay in step: every option any
command's --help lists is in the page (long and short), every command, and every finding code
(commands/analysis/finding_codes.cpp)."""
import os
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
    options = set(re.findall(r"(--[a-z][a-z-]+)", helptext)) | set(re.findall(r"(?<![\w-])(-[a-zA-Z]),--", helptext))
    for option in sorted(options):
        if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(option), text):
            missing.append("%s (from `pytstates %s --help`)" % (option, command))
codes = re.findall(r'\{C::\w+,\s*"([a-z-]+)"', open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                                     "commands", "analysis", "finding_codes.cpp")).read())
if not codes:
    missing.append("(no finding code read from commands/analysis/finding_codes.cpp)")
for code in codes:
    if ".B " + code not in text:
        missing.append("the finding " + code)
# The page as built: its version filled in (`man -l` of the template showed @VERSION@).
left = sorted(set(re.findall(r"@[A-Z_]+@", text)))
if left:
    missing.append("its placeholders filled in (%s)" % ", ".join(left))
if missing:
    print("FAIL: the man page lacks " + ", ".join(missing))
    sys.exit(1)
print("PASS: every command and option of the CLI's help, and all %d finding codes, are in the man page" % len(codes))
