#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The slowest tests of a ctest run, read from its printed output (the lines
`NNN/MMM Test #K: NAME ....   Passed   12.34 sec`), so that CI's last lines say where its time went.
Usage: ci_times.py LOG TITLE [N]"""
import re
import sys


def main():
    log, title = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    # the name, then (gtest's parameterized names add "# GetParam() = ...") dots, the result, the time
    line = re.compile(r"Test +#\d+: (\S+) .*?(Passed|\*\*\*\w[\w ]*?)\s+([\d.]+) sec\s*$")
    times = []
    try:
        with open(log, errors="replace") as f:
            for text in f:
                m = line.search(text)
                if m:
                    times.append((float(m.group(3)), m.group(1), m.group(2).lstrip("*")))
    except OSError as e:
        print("ci: %s: no test log (%s)" % (title, e.strerror))
        return
    if not times:
        print("ci: %s: no test ran" % title)
        return
    total = sum(t for t, _, _ in times)
    print("ci: %s: %d tests, %.0f s of test time; the %d slowest:" % (title, len(times), total, min(count, len(times))))
    for t, name, result in sorted(times, reverse=True)[:count]:
        print("ci:   %7.1f s  %s%s" % (t, name, "" if result == "Passed" else "  (" + result + ")"))


if __name__ == "__main__":
    main()
