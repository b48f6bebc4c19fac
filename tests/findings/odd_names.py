#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Names that are not UTF-8 (an executable path with a Latin-1 byte and a control character, a
script path Python holds with lone surrogates, a function name with one): `--json` is valid JSON
that json.loads parses, each such string comes with its exact bytes in "<name>_bytes", and the text
output shows the bytes escaped (\\xNN), never raw. On a gcore core and on the live process. And a
function name of characters a terminal obeys rather than shows (U+009B, a CSI; U+0085; U+202E and
U+2066, which reorder the line): \\uNNNN in the text, \\u escapes in the JSON, never raw."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import json_contract  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ODD = b"\xe9\x17"  # a Latin-1 byte and a control character


def check(pytstates, target_args, facts, what):
    out = subprocess.run([pytstates, "check", "--json"] + target_args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=120)
    expect(out.returncode in (0, 1), "%s: --json exited %d: %r" % (what, out.returncode, out.stderr))
    r = json_contract.loads(out.stdout)  # strict UTF-8 and valid JSON, or this raises
    out.stdout.decode("utf-8")
    exe = bytes.fromhex(facts["executable"])
    expect(r["target"].get("executable_bytes") == exe.hex(), "%s: executable_bytes holds the exact path" % what, r)
    expect(r["target"]["executable"] == exe.decode("utf-8", "replace"), "%s: executable with U+FFFD" % what, r)
    frames = [f for rt in r["runtimes"] for i in rt["interpreters"] for t in i["tstates"] if t["lwp"] == facts["worker_lwp"]
              for f in t["frames"]]
    odd = [f for f in frames if f.get("function_bytes") == facts["function"]]
    expect(odd, "%s: the worker's frame with the odd function name, as bytes" % what, r)
    expect(odd[0].get("file_bytes") == facts["script"], "%s: its file name, as bytes" % what, r)
    text = subprocess.run([pytstates, "check"] + target_args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    expect(text.returncode in (0, 1), "%s: text exited %d" % (what, text.returncode))
    shown = text.stdout.decode("utf-8")  # nothing ill-formed reaches the terminal
    expect("\x17" not in shown and "\\x17" in shown and "\\xe9" in shown,
           "%s: control characters and stray bytes are escaped:\n%s" % (what, shown[:3000]))
    print("%s: executable %r, function %r: JSON and text as expected" % (
        what, r["target"]["executable"], odd[0]["function"]))


# A worker waits inside a function whose co_name would clear the screen and reverse the line.
CONTROLS_CODE = r'''
import json, sys, threading
ready = threading.Event()
def waiting_here(event):
    ready.set()
    event.wait()
name = "evil\u009b2J\u202egpj.exe\u0085\u2066x\u200f"
waiting = type(waiting_here)(waiting_here.__code__.replace(co_name=name), globals())
worker = threading.Thread(target=waiting, args=(threading.Event(),), daemon=True)
worker.start()
ready.wait()
print("FACTS " + json.dumps({"worker_lwp": worker.native_id, "function": name}), flush=True)
print("READY", flush=True)
sys.stdin.readline()
'''
HIDDEN = ("\u009b", "\u0085", "\u202e", "\u2066", "\u200f")


def terminal_controls(pytstates):
    facts, core = scenario.take_core([scenario.PYTHON, "-c", CONTROLS_CODE], "gcore")
    try:
        text = subprocess.run([pytstates, "check", "--core", core], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        shown = text.stdout.decode("utf-8")
        expect(text.returncode in (0, 1) and "evil\\u009b2J\\u202egpj.exe\\u0085\\u2066x\\u200f" in shown,
               "the function name with its controls escaped as \\uNNNN:\n" + shown[:3000])
        expect(not any(c in shown for c in HIDDEN), "no C1 control or bidirectional override reaches the terminal")
        out = subprocess.run([pytstates, "check", "--json", "--core", core], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        raw = out.stdout.decode("utf-8")
        expect(not any(c in raw for c in HIDDEN) and "\\u009b" in raw and "\\u202e" in raw, "JSON holds them as \\u escapes")
        r = json_contract.loads(raw)
        names = [f["function"] for rt in r["runtimes"] for i in rt["interpreters"] for t in i["tstates"]
                 if t["lwp"] == facts["worker_lwp"] for f in t["frames"]]
        expect(facts["function"] in names, "the JSON decodes to the very name", names)
        print("controls in a function name: text %r" % [l for l in shown.splitlines() if "evil" in l][:1])
    finally:
        scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="pytstates-odd-")
    try:
        base = os.fsencode(tmp)
        bindir, scriptdir = base + b"/bin" + ODD, base + b"/scripts" + ODD
        os.makedirs(bindir)
        os.makedirs(scriptdir)
        python = bindir + b"/python" + ODD
        shutil.copy2(scenario.PYTHON.encode(), python)
        for name in ("odd_names.py", "pause.py"):
            shutil.copy2(os.path.join(HERE, "..", "scenarios", "live", name), os.fsdecode(scriptdir) + "/" + name)
        argv = [python, scriptdir + b"/odd_names.py"]
        facts, core = scenario.take_core(argv, "gcore")
        try:
            check(args.pytstates, ["--core", core], facts, "core")
        finally:
            scenario.cleanup(core)
        with scenario.running(argv) as (proc, facts):
            check(args.pytstates, ["--pid", str(proc.pid)], facts, "live")
            expect(scenario.still_answers(proc), "the process answers and exits normally")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    terminal_controls(args.pytstates)
    print("PASS odd names")


if __name__ == "__main__":
    main()
