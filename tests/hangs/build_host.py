#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds tests/scenarios/hangs/hang_host.cpp for an interpreter that exists only once a test has
made it (the free-threaded 3.13t of scripts/python-freethreaded): its headers, its libpython,
pybind11 2.13's headers, the same flags as the project's scenario_hang_host."""
import argparse
import os
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--freethreaded", required=True, help="3.13: the CPython scripts/python-freethreaded builds")
    p.add_argument("--pybind11", required=True, help="pybind11 2.13's include directory")
    p.add_argument("--source", required=True)
    p.add_argument("--output", required=True)
    args = p.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([os.path.join(here, "..", "..", "scripts", "python-freethreaded"), args.freethreaded],
                         stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit("build_host: no free-threaded CPython %s" % args.freethreaded)
    python = os.path.join(out.stdout.strip(), "bin", "python%st" % args.freethreaded)
    if not os.path.exists(os.path.join(args.pybind11, "pybind11", "embed.h")):
        sys.exit("build_host: no pybind11 headers in %s" % args.pybind11)
    include, libdir, library = subprocess.run(
        [python, "-c", "import sysconfig as s; print(s.get_paths()['include']); print(s.get_config_var('LIBDIR')); "
                       "print(s.get_config_var('LDLIBRARY'))"],
        stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    # The compiler's own directory is searched already: -isystem /usr/include (Debian 13's pybind11
    # lives there) reorders it before libstdc++'s and breaks its #include_next <stdlib.h> (GCC 14).
    pybind11 = [] if os.path.realpath(args.pybind11) == "/usr/include" else ["-isystem", args.pybind11]
    command = ["c++", "-std=c++17", "-O2", "-g", "-UNDEBUG", "-pthread", "-Wall", "-Wextra"] + pybind11 + [
               "-isystem", include, args.source, "-o", args.output, os.path.join(libdir, library), "-ldl",
               "-Wl,-rpath," + libdir]
    print(" ".join(command), flush=True)
    sys.exit(subprocess.run(["nice", "-n", "10"] + command).returncode)


if __name__ == "__main__":
    main()
