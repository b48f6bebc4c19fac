#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Debian package, for real: `cpack -G DEB` in the build directory, its metadata and contents
(dpkg-deb), Debian's lintian (no error), `dpkg -i` on this machine, then the installed commands on
a real core with nothing sourced by hand: gdb (loaded from /etc/gdb/gdbinit.d) and the default lldb (with
the README's line in ~/.lldbinit) print what the installed CLI prints; `man -l` renders the page;
`dpkg --purge` leaves nothing behind. Runs alone (it installs into /usr and /etc)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import json_contract  # noqa: E402
import findings_cases  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

LLDB_INIT = "plugin load /usr/lib/pytstates/lldb/libpytstates-lldb.so"  # the README's line
EXPECTED_FILES = ["./etc/gdb/gdbinit.d/pytstates.py", "./usr/bin/pytstates", "./usr/lib/pytstates/lldb/libpytstates-lldb.so",
                  "./usr/lib/pytstates/libpytstates.so.0", "./usr/lib/pytstates/python/pytstates/core.py",
                  "./usr/lib/pytstates/python/pytstates/_ctypes_core.py", "./usr/lib/pytstates/python/pytstates/lldb.py",
                  "./usr/share/pytstates/gdb/pytstates.py", "./usr/share/pytstates/lldb/pytstates.py",
                  "./usr/lib/pytstates/python/pytstates/__init__.py", "./usr/lib/pytstates/python/pytstates/gdb.py",
                  "./usr/share/doc/pytstates/changelog.gz", "./usr/share/doc/pytstates/copyright",
                  "./usr/share/man/man1/pytstates.1.gz"]
# What the package installs at the top: what an earlier run or a `cmake --install` to /usr may
# have left behind.
INSTALLED_PATHS = ("/usr/bin/pytstates", "/etc/gdb/gdbinit.d/pytstates.py", "/usr/lib/pytstates")


def run(argv, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)  # dpkg's prompts fail at once rather than wait
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, **kw)
    return out.returncode, out.stdout.decode(errors="replace")


def package_known():
    """dpkg knows pytstates in any state: installed, half-configured (a failed dpkg -i), or its
    conffiles only."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", "pytstates"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    return out.returncode == 0 and out.stdout.decode().strip() not in ("", "not-installed")


def clear_leftovers(aside):
    """Purges a pytstates package an earlier run left (even one whose dpkg -i failed), then moves
    the package's paths that no package owns (a `cmake --install` to /usr) into `aside`: an
    unowned /etc/gdb/gdbinit.d/pytstates.py makes dpkg -i ask what to do with the conffile, and
    fail. Returns what was moved, to be put back."""
    if package_known():
        status, out = run(["dpkg", "--purge", "pytstates"])
        expect(status == 0, "dpkg --purge of an earlier run's pytstates failed:\n" + out[-2000:])
        print("purged the pytstates package an earlier run left")
    moved = []
    for path in INSTALLED_PATHS + ("/etc/gdb/gdbinit.d/pytstates.py.dpkg-new", "/etc/gdb/gdbinit.d/pytstates.py.dpkg-old"):
        if os.path.lexists(path):
            kept = os.path.join(aside, path.strip("/").replace("/", "%"))
            shutil.move(path, kept)
            moved.append((kept, path))
            print("moved aside %s, owned by no package (put back at the end)" % path)
    return moved


def normalized(report):
    """What a debugger and the CLI both say: the debugger's thread numbers, the files' sources,
    whether pytstates' DWARF cache answered (lldb runs with another HOME, so another cache) and
    lldb's missing siginfo aside."""
    for row in report["threads"]:
        row.pop("debugger_thread", None)
    for rt in report.get("runtimes", []):
        rt.pop("layout_cached", None)
    report.pop("warnings", None)
    for key in ("files", "stopped_ms", "read_after_resume"):
        report["target"].pop(key, None)
    if report["target"].get("crash"):
        for key in ("code", "code_name", "fault_address", "sender_pid"):
            report["target"]["crash"].pop(key, None)
        report["target"]["crash"].pop("explanation", None)
    return report


def json_after(text, marker):
    text = text[text.index(marker):] if marker in text else text
    return json_contract.loads(text[text.index("{"):text.rindex("}") + 1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--scenarios", required=True)
    args = p.parse_args()
    cache = open(os.path.join(args.build, "CMakeCache.txt")).read()
    expect("CMAKE_INSTALL_PREFIX:PATH=/usr\n" in cache,
           "the build directory installs elsewhere than /usr: configure it with -DCMAKE_INSTALL_PREFIX=/usr (scripts/package does)")
    out_dir = tempfile.mkdtemp(prefix="pytstates-deb-")
    workdir = tempfile.mkdtemp(prefix="pytstates-deb-run-")
    aside = tempfile.mkdtemp(prefix="pytstates-deb-aside-")
    moved = []
    try:
        moved = clear_leftovers(aside)
        status, out = run(["cpack", "-G", "DEB", "-B", out_dir], cwd=args.build)
        expect(status == 0, "cpack failed:\n" + out[-3000:])
        debs = [f for f in os.listdir(out_dir) if f.endswith(".deb")]
        expect(len(debs) == 1 and re.match(r"^pytstates_\d+\.\d+\.\d+_amd64\.deb$", debs[0]), "one pytstates_<version>_amd64.deb: %s" % debs)
        deb = os.path.join(out_dir, debs[0])

        _, info = run(["dpkg-deb", "--info", deb])
        fields = dict(re.findall(r"^ ([A-Z][\w-]*): (.*)$", info, re.M))
        depends = fields.get("Depends", "")
        for needed in ("libdw1", "libelf1", "libpython" + scenario.PYTHON_VERSION, "libzstd1", "libdebuginfod1"):
            expect(needed in depends, "Depends names %s: %s" % (needed, depends))
        lldb = re.search(r"/usr/lib/llvm-(\d+)/", os.path.realpath(shutil.which(scenario.LLDB) or ""))
        expect(lldb is not None, "no default lldb (/usr/bin/lldb -> /usr/lib/llvm-N/bin/lldb)")
        expect("lldb" not in depends and "lldb-" + lldb.group(1) in fields.get("Suggests", "") and "gdb" in fields.get("Enhances", ""),
               "gdb and lldb are suggested/enhanced, not required: %s" % fields)
        expect("conffiles" in info, "the gdb loader in /etc is a conffile")
        _, contents = run(["dpkg-deb", "--contents", deb])
        listed = [line.split()[-1] for line in contents.splitlines()]
        for f in EXPECTED_FILES:
            expect(f in listed, "the package holds %s" % f)
        tag = scenario.PYTHON_VERSION.replace(".", "")
        expect(any(re.match(r"\./usr/lib/pytstates/python/pytstates/_pytstates_core\.cpython-%s-x86_64-linux-gnu\.so$" % tag, f) for f in listed),
               "the gdb module, built for gdb's Python %s" % scenario.PYTHON_VERSION)
        print(contents)

        status, lint = run(["lintian", deb])
        errors = [l for l in lint.splitlines() if l.startswith("E:")]
        expect(not errors, "lintian errors:\n" + "\n".join(errors))
        print("lintian: %d errors, %d warnings" % (len(errors), sum(l.startswith("W:") for l in lint.splitlines())))

        status, out = run(["dpkg", "-i", deb])
        expect(status == 0, "dpkg -i failed:\n" + out[-2000:])
        status, version = run(["/usr/bin/pytstates", "--version"])
        expect(status == 0 and re.match(r"^pytstates \d+\.\d+\.\d+", version), "pytstates --version: %r" % version)
        _, gdb_help = run(["gdb", "-q", "-batch", "-ex", "help py-tstates"])
        expect(version.split()[1] in gdb_help, "gdb's help py-tstates says the version %s:\n%s" % (version.split()[1], gdb_help[:500]))
        status, page = run(["man", "-l", "/usr/share/man/man1/pytstates.1.gz"], env=dict(os.environ, MANWIDTH="80"))
        expect(status == 0 and "PYTSTATES(1)" in page and "--offline" in page.replace("\u2010", "-"), "man -l renders the page")

        argv = findings_cases.argv(args.scenarios, "seed-svr2", crash=True)
        facts, core = scenario.take_core(argv, "crash", workdir=workdir)
        status, cli = run(["/usr/bin/pytstates", "check", "--json", "--core", core])
        expect(status == 1, "the installed CLI: exit 1 on the seed's crash core")
        cli = normalized(json_contract.loads(cli))

        # gdb as a user starts it: no -nx, no source line.
        status, gdb_out = run(["gdb", "-q", "-batch", "-ex", "py-tstates-check --json", argv[0], core])
        expect("{" in gdb_out, "gdb printed no report (the commands were not loaded at start-up?):\n" + gdb_out[-2000:])
        expect(normalized(json_after(gdb_out, "{")) == cli,
               "gdb's py-tstates-check (loaded from /etc/gdb/gdbinit.d) says what the CLI says")
        status, gdb_text = run(["gdb", "-q", "-batch", "-ex", "py-tstates-check", argv[0], core])
        print("$ gdb -q -batch -ex py-tstates-check %s core\n%s" % (os.path.basename(argv[0]), gdb_text[gdb_text.index("core of pid"):][:2500]))

        home = os.path.join(workdir, "home")
        os.makedirs(home)
        with open(os.path.join(home, ".lldbinit"), "w") as f:
            f.write(LLDB_INIT + "\n")
        status, lldb_out = run([scenario.LLDB, "-b", "-o", "py-tstates-check --json", "--core", core, argv[0]],
                               env=dict(os.environ, HOME=home), stdin=subprocess.DEVNULL)
        expect("{" in lldb_out, "lldb printed no report (~/.lldbinit's plugin load?):\n" + lldb_out[-2000:])
        expect(normalized(json_after(lldb_out, "(lldb) py-tstates-check")) == cli,
               "lldb's py-tstates-check (plugin loaded by ~/.lldbinit) says what the CLI says")
        print("gdb and lldb from the installed package print the CLI's report (%d findings)" % len(cli["findings"]))
    finally:
        try:
            # Also after a failed dpkg -i: the next run must not meet this one's half-installed package.
            if package_known():
                status, out = run(["dpkg", "--purge", "pytstates"])
                left = [f for f in INSTALLED_PATHS if os.path.lexists(f)]
                expect(status == 0 and not left, "dpkg --purge removes everything: left %s" % left)
        finally:
            for kept, path in moved:
                if not os.path.lexists(path):
                    shutil.move(kept, path)
            shutil.rmtree(aside, ignore_errors=True)
            shutil.rmtree(out_dir, ignore_errors=True)
            shutil.rmtree(workdir, ignore_errors=True)
    print("PASS package")


if __name__ == "__main__":
    main()
