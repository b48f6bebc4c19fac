# SPDX-License-Identifier: Apache-2.0
"""Real arm64 (aarch64) cores of programs run under qemu user-mode emulation on this x86_64 machine.

root() builds (once) the arm64 tree of this machine's Debian release (Debian 12: CPython 3.11;
Debian 13: 3.13) and qemu-aarch64-static (scripts/arm64-root, which says why this machine's
release) and returns (root, qemu); version(tree) is the tree's "3.11" or "3.13". take_core() runs
a guest program under qemu to its pause point, the way scenario.take_core() does for native ones:
the program prints one line `FACTS {json}` with what it knows about itself, then `READY`, then
waits for a line "abort" on its stdin and calls abort() (a program that aborts by itself after READY is fine too). qemu then writes
the guest's core, qemu_<program>_<time>_<pid>.core, in the working directory. take_core() returns
(facts, core_path); the caller removes the directory it lives in (scenario.cleanup(core_path)).

What qemu's cores are (qemu 7.2 of Debian 12; 10.0 of Debian 13), against the kernel's:
  - notes: NT_PRSTATUS per thread (x0-x30, sp, pc, pstate), one NT_PRPSINFO, NT_AUXV; no NT_FILE,
    NT_SIGINFO, NT_FPREGSET, NT_ARM_TLS: the thread pointer tpidr_el0 is not in the core (glibc
    puts struct pthread just below it: pthread_self() == tpidr_el0 - sizeof(struct pthread),
    glibc's _thread_db_sizeof_pthread: 1856 on Debian 12's 2.36, 1824 on Debian 13's 2.41);
  - read-only file-backed mappings are not dumped at all, not even the ELF header page the kernel
    keeps: their contents come from the files (of the root) through the link map;
  - the guest's addresses are the same from run to run (0x55_0000_0000 and up, no ASLR).

gdb_multiarch() runs gdb-multiarch in batch mode on an arm64 program and core with the root as its
sysroot, and with CPython's gdb script (py-bt, py-list, ...) loaded when the root has one for it.

The tests that use this need the system packages gdb-multiarch (reading the cores) and, to build
arm64 extension modules or programs embedding Python, g++-aarch64-linux-gnu (and pybind11-dev for
pybind11 modules); compile_flags() gives the flags for the latter. scripts/arm64-root itself needs
only apt-get, dpkg and the network to Debian's mirror.
"""
import glob
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time

import scenario  # noqa: E402 (tests/lib, beside this file)

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(PROJECT, "scripts", "arm64-root")
TRIPLET = "aarch64-linux-gnu"
READY_TIMEOUT = 120  # an emulated interpreter starts in about a second; give slow machines room
DEATH_TIMEOUT = 120


class Arm64Error(Exception):
    pass


_root = None


def root(directory=None):
    """Builds the arm64 tree when needed (scripts/arm64-root [directory]); returns (root, qemu).
    Raises Arm64Error with the script's one-line reason when it cannot be had."""
    global _root
    if _root is not None and directory is None:
        return _root
    argv = [SCRIPT] + ([directory] if directory else [])
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1800)
    if out.returncode != 0:
        raise Arm64Error(out.stderr.decode(errors="replace").strip() or
                         "scripts/arm64-root exited with %d" % out.returncode)
    tree = out.stdout.decode().strip().splitlines()[-1]
    qemu = os.path.join(os.path.dirname(tree), "qemu", "usr", "bin", "qemu-aarch64-static")
    if not os.access(qemu, os.X_OK):
        raise Arm64Error("scripts/arm64-root printed %s but there is no %s" % (tree, qemu))
    if directory is None:
        _root = (tree, qemu)
    return tree, qemu


def version(tree=None):
    """The tree's CPython version, "3.11" (Debian 12) or "3.13" (Debian 13): the second word of
    ROOT/.suite, which scripts/arm64-root writes ("SUITE X.Y")."""
    with open(os.path.join(tree or root()[0], ".suite")) as f:
        return f.read().split()[1]


def python_name(tree=None):
    """The interpreter's name: python3.11, python3.13."""
    return "python" + version(tree)


def python(tree=None):
    """The arm64 interpreter's path (inside the root)."""
    tree = tree or root()[0]
    return os.path.join(tree, "usr", "bin", python_name(tree))


def extension_suffix(tree=None):
    """An extension module's file name suffix for the tree's CPython: .cpython-311-aarch64-linux-gnu.so."""
    return ".cpython-%s-%s.so" % (version(tree).replace(".", ""), TRIPLET)


def guest_env(env=None):
    """The environment for a guest: PYTHONHOME=/usr, which qemu's -L resolves inside the root
    (an interpreter or embedding program outside the root would otherwise look for its standard
    library next to itself)."""
    env = dict(os.environ if env is None else env)
    env.setdefault("PYTHONHOME", "/usr")
    env.setdefault("PYTHONNOUSERSITE", "1")
    return env


def guest_argv(argv, tree=None, qemu=None):
    """argv run under qemu with the root as the prefix of the guest's absolute paths."""
    if tree is None or qemu is None:
        tree, qemu = root()
    return [qemu, "-L", tree] + list(argv)


def run(argv, env=None, timeout=300, **kwargs):
    """subprocess.run of a guest program under qemu (stdout and stderr captured)."""
    return subprocess.run(guest_argv(argv), env=guest_env(env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, **kwargs)


def take_core(argv, workdir=None, env=None, settle=0.5, expect_signal=signal.SIGABRT, after_ready=None):
    """Runs argv (argv[0] an arm64 program, in the root or not) under qemu in a fresh working
    directory with RLIMIT_CORE unlimited, waits for READY, tells it "abort" (unless it has died by
    itself meanwhile), waits for its death by SIGABRT and returns (facts, core_path).

    The working directory gets a directory named `core` first: qemu kills itself with the guest's
    signal after writing the guest's core, and the kernel's own core of qemu (an x86_64 one, with
    core_pattern 'core') then has nowhere to go. settle: seconds between READY and "abort", for the
    guest's threads to get into the blocking calls they announced. expect_signal: the signal the
    guest is to die by (SIGSEGV for a crash scenario; qemu re-raises the guest's signal).
    after_ready(proc): called once READY is read, while the guest still runs."""
    tree, qemu = root()
    workdir = workdir or tempfile.mkdtemp(prefix="pytstates-arm64-")
    os.makedirs(os.path.join(workdir, "core"), exist_ok=True)

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    before = set(glob.glob(os.path.join(workdir, "qemu_*.core")))
    proc = subprocess.Popen(guest_argv(argv, tree, qemu), cwd=workdir, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=guest_env(env),
                            preexec_fn=limits)
    try:
        facts = scenario.read_facts(proc, time.monotonic() + READY_TIMEOUT, Arm64Error, "the guest")
        if after_ready:  # a look at the running process (qemu's own /proc/PID), before it aborts
            after_ready(proc)
        try:
            proc.wait(timeout=settle)  # a guest that aborts by itself after READY
        except subprocess.TimeoutExpired:
            try:
                proc.stdin.write(b"abort\n")
                proc.stdin.flush()
            except BrokenPipeError:
                pass  # it died just now
        try:  # what it prints on its way out; communicate() closes stdin
            rest, _ = proc.communicate(timeout=DEATH_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Arm64Error("the guest did not die within %d s of READY" % DEATH_TIMEOUT)
        if proc.returncode != -expect_signal:
            raise Arm64Error("the guest ended with status %d instead of dying by %s; it printed after "
                             "READY:\n%s" % (proc.returncode, signal.Signals(expect_signal).name,
                                             rest.decode(errors="replace")))
        cores = sorted(set(glob.glob(os.path.join(workdir, "qemu_*.core"))) - before,
                       key=os.path.getmtime)
        if not cores:
            raise Arm64Error("qemu wrote no guest core in %s; the guest printed after READY:\n%s"
                             % (workdir, rest.decode(errors="replace")))
        return facts, cores[-1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def gdb_script(tree):
    """CPython's gdb script (py-bt, py-list, py-locals, ...) in the root, or None. Debian ships one
    file for pythonX.Y, pythonX.Yd and both libpythons, for gdb's auto-loading, which does not
    find it through a sysroot (it would look for /usr/share/gdb/auto-load/ROOT/usr/bin/...)."""
    script = os.path.join(tree, "usr", "share", "gdb", "auto-load", "usr", "bin", python_name(tree) + "-gdb.py")
    return script if os.path.exists(script) else None


def gdb_multiarch(tree, exe, core, commands, solib_dirs=(), timeout=300):
    """gdb-multiarch's stdout for commands (a list) on exe and core, in batch mode, with
    `set sysroot ROOT`, the root's DWARF (usr/lib/debug: pythonX.Y's and glibc's) and CPython's gdb
    script loaded, for exe in the root or not (a program embedding the root's libpython).
    The cores hold no tpidr_el0: `p $tpidr` is void; gdb names threads by their pthread_t anyway,
    through libthread_db walking glibc's thread list in memory (the host's libthread_db serves an
    arm64 target of its own glibc version only: hence a tree of this machine's release). solib_dirs: directories of shared objects outside the root (a cross-compiled
    extension module: with a sysroot, gdb looks for DIR/m.so as ROOT/DIR/m.so only).
    A program outside the root must be linked -no-pie: qemu does not dump the first page of
    read-only file mappings (the kernel does), so the program headers at AT_PHDR are not in the
    core and gdb cannot relocate a PIE (no link map, no shared libraries, no threads' pthread_t).
    Debian's pythonX.Y and pythonX.Yd are not PIE. Raises Arm64Error when gdb-multiarch is not
    installed."""
    gdb = shutil.which("gdb-multiarch")
    if gdb is None:
        raise Arm64Error("gdb-multiarch is not installed (Debian package gdb-multiarch)")
    argv = [gdb, "-nx", "-batch",
            "-iex", "set auto-load safe-path /",
            "-iex", "set sysroot " + tree,
            "-iex", "set debug-file-directory " + os.path.join(tree, "usr", "lib", "debug"),
            "-iex", "set pagination off", "-iex", "set width 0", "-iex", "set confirm off"]
    if solib_dirs:
        argv += ["-iex", "set solib-search-path " + ":".join(solib_dirs)]
    script = gdb_script(tree)
    if script:
        argv += ["-ex", "source " + script]
    for command in commands:
        argv += ["-ex", command]
    argv += [exe, core]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return out.stdout.decode(errors="replace")


def compile_flags(tree=None):
    """Flags for aarch64-linux-gnu-g++ against the root's CPython: (compile, link_embed).
    compile: the root's Python headers; <pyconfig.h> is Debian's wrapper, which includes
    <aarch64-linux-gnu/pythonX.Y/pyconfig.h> (hence ROOT/usr/include). Debian's cross compiler
    searches its own /usr/aarch64-linux-gnu/include first and the host's /usr/include last, where
    only the architecture-independent pybind11 headers (package pybind11-dev) are taken from.
    link_embed: for a program embedding Python, the root's libpythonX.Y.so and -rpath-link for its
    dependencies (libz, libexpat, ...); add -no-pie for gdb_multiarch's sake (see there). An
    extension module is `-shared -fPIC` with compile only,
    named NAME + extension_suffix(tree)."""
    tree = tree or root()[0]
    inc = os.path.join(tree, "usr", "include")
    lib = os.path.join(tree, "usr", "lib", TRIPLET)
    name = python_name(tree)
    compile_ = ["-I" + inc, "-I" + os.path.join(inc, name)]
    link_embed = ["-L" + lib, "-l" + name, "-Wl,-rpath-link," + lib]
    return compile_, link_embed

