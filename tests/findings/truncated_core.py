#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A kernel core cut short (`truncate`, as a full disk or a core size limit leaves it) of a process
that embeds libpython: where what is left holds no CPython runtime, the report says CPython was
loaded, naming the file the core's NT_FILE maps (eu-readelf -n, the oracle, lists it), and that its
memory is cut off; never "the process does not run CPython". The whole core's report has the
runtime (the program is Python)."""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    args = p.parse_args()
    exe = os.path.join(args.scenarios, "scenario_seed_host")
    facts, core = scenario.take_core([exe, "svr1", "pause"], "kernel")
    try:
        # elfutils' reader decodes NT_FILE ("start-end offset size path" per mapping; binutils'
        # readelf of Debian 12 cannot, in its 32-bit build).
        notes = subprocess.run(["eu-readelf", "-n", core], stdout=subprocess.PIPE, check=True).stdout.decode(errors="replace")
        paths = {line.split()[-1] for line in notes.splitlines() if re.match(r"\s+[0-9a-f]+-[0-9a-f]+ [0-9a-f]+ \d+\s+/", line)}
        mapped = sorted(p for p in paths if re.search(r"/libpython3\.\d+[a-z]*\.so[.\d]*$", p))
        expect(len(mapped) == 1, "the core's NT_FILE maps one libpython (eu-readelf -n): %s of %s" % (mapped, sorted(paths)))
        status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core])
        expect(r["runtimes"] and not r.get("no_runtime"), "the whole core has its CPython runtime", r.get("no_runtime"))
        size = os.path.getsize(core)
        cut = core + ".cut"
        without = 0
        for percent in (75, 50, 25):
            shutil.copy(core, cut)
            os.truncate(cut, size * percent // 100)
            status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", cut])
            expect(status in (0, 1), "cut at %d%%: analysed (exit %d): %s" % (percent, status, err))
            if r["runtimes"]:
                print("cut at %d%%: the runtime is in what is left" % percent)
                continue
            without += 1
            said = r["no_runtime"]
            expect("does not run CPython" not in said and
                   "CPython was loaded (the core's mapped files name %s) but its memory is cut off" % mapped[0] in said,
                   "cut at %d%%: CPython was loaded, its memory is cut off: %s" % (percent, said))
            status, text, err = scenario.run_pytstates(args.pytstates, ["check", "--width", "0", "--core", cut])
            expect(mapped[0] in text and "does not run CPython" not in text, "cut at %d%%: the text says it too:\n%s" % (percent, text[:3000]))
            print("cut at %d%%: %s" % (percent, said))
        expect(without, "a cut loses the runtime (75%, 50% or 25% of the core)")
    finally:
        scenario.cleanup(core)
    print("PASS truncated core")


if __name__ == "__main__":
    main()
