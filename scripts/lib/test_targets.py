#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The build targets the tests a ctest selection picks need, so that `scripts/test -R REGEX` builds
only those (a whole build is minutes of compiling the scenario programs of every test).

Usage: test_targets.py BUILD_DIR [CTEST_ARGS...]   prints one target per line; "fuzz" on a line of
its own when a selected test needs the clang fuzz tree (scripts/fuzz).

What a test needs, from what CMake and CTest say of it (the file API's codemodel, ctest's
--show-only=json-v1), not from a list kept by hand:
- every build-tree path its command names: the target whose artifact it is, or every target with
  an artifact under it when it is a directory (--scenarios DIR);
- the scenario programs of its own folder: a test defined in tests/D/CMakeLists.txt finds programs
  of tests/scenarios/D by name (tests/lib/findings_cases.py);
- the front ends (the CLI, the gdb module, the lldb plugin): tests drive them through scripts the
  build configures (plugin/gdb/pytstates.gdb), which the file API does not tie to a target;
- the tests of the fixtures it requires (versions.3.14.fetch), ctest adds them to the run.
"""
import json
import os
import subprocess
import sys

FRONT_ENDS = ("pytstates", "_pytstates_core", "pytstates-lldb")


def codemodel(build):
    reply = os.path.join(build, ".cmake", "api", "v1", "reply")
    index = sorted(f for f in os.listdir(reply) if f.startswith("index-"))[-1]
    with open(os.path.join(reply, index)) as f:
        objects = json.load(f)["objects"]
    model = next(o for o in objects if o["kind"] == "codemodel")
    with open(os.path.join(reply, model["jsonFile"])) as f:
        model = json.load(f)
    targets = []
    for config in model["configurations"][:1]:
        for entry in config["targets"]:
            with open(os.path.join(reply, entry["jsonFile"])) as f:
                t = json.load(f)
            artifacts = [os.path.normpath(os.path.join(build, a["path"])) for a in t.get("artifacts", [])]
            targets.append((t["name"], t["paths"]["source"], artifacts))
    return targets


def selected_tests(build, args):
    out = subprocess.run(["ctest", "--show-only=json-v1"] + args, cwd=build, stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)


def main():
    build = os.path.abspath(sys.argv[1])
    args = sys.argv[2:]
    targets = codemodel(build)
    shown = selected_tests(build, args)
    everything = selected_tests(build, []) if args else shown
    tests = list(shown["tests"])
    # ctest runs the setup tests of the fixtures a selected test requires: they need their targets too.
    names = {t["name"] for t in tests}
    wanted = set()
    for t in tests:
        for p in t.get("properties", []):
            if p["name"] == "FIXTURES_REQUIRED":
                wanted.update(p["value"])
    while wanted:
        more = set()
        for t in everything["tests"]:
            props = {p["name"]: p["value"] for p in t.get("properties", [])}
            if t["name"] not in names and set(props.get("FIXTURES_SETUP", [])) & wanted:
                names.add(t["name"])
                tests.append(t)
                more.update(props.get("FIXTURES_REQUIRED", []))
        wanted = more
    files = shown["backtraceGraph"]["files"]
    nodes = shown["backtraceGraph"]["nodes"]
    need = set(FRONT_ENDS)
    fuzz = False
    for t in tests:
        if t["name"].startswith("fuzz."):
            fuzz = True
        defined = None
        if "backtrace" in t and t["backtrace"] is not None:
            defined = os.path.dirname(files[nodes[t["backtrace"]]["file"]])
        for word in t.get("command", []):
            for piece in word.replace("=", " ").split():
                path = os.path.normpath(piece)
                if not path.startswith(build):
                    continue
                for name, _, artifacts in targets:
                    if any(a == path or a.startswith(path + os.sep) for a in artifacts):
                        need.add(name)
        if defined:
            folder = os.path.basename(defined)
            for name, source, _ in targets:
                if source == os.path.join("tests", "scenarios", folder) or source.startswith(
                        os.path.join("tests", "scenarios", folder) + os.sep):
                    need.add(name)
    known = {name for name, _, _ in targets}
    for name in sorted(need & known):
        print(name)
    if fuzz:
        print("fuzz")


if __name__ == "__main__":
    main()
