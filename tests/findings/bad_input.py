#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bad input gets one clear line and exit status 2 (or a result with a note), never a crash or a
hang: missing, non-ELF and non-core files, a FIFO or a directory, a core without Python, a wrong,
relative, truncated or corrupt --exe, a program started as `ld.so PROGRAM`, truncated cores,
cyclic thread-state and interpreter lists patched into a real core, a module file missing."""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import findings_cases  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402


def field_offset(exe, core, struct_type, field):
    """A field's offset in the core's libpython, from its DWARF as gdb reads it (no Python's layout
    is written here)."""
    out = subprocess.run(["gdb", "-q", "-batch", "-nx", "-ex", "print/d (long)&((%s*)0)->%s" % (struct_type, field), exe, core],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode()
    m = re.search(r"^\$1 = (\d+)\s*$", out, re.M)
    expect(m is not None, "gdb could not read the offset of %s.%s:\n%s" % (struct_type, field, out[-2000:]))
    return int(m.group(1))


def run(args, argv, timeout=60):
    out = subprocess.run([args.pytstates] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")


def expect_refused(args, argv, words, cwd=None, within=None):
    import time
    started = time.monotonic()
    out = subprocess.run([args.pytstates] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, cwd=cwd)
    took = time.monotonic() - started
    status, out, err = out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")
    expect(status == 2 and out == "" and err.count("\n") == 1 and words in err and "Traceback" not in err,
           "%s: expected exit 2 and one line with %r; got %d, stdout %r, stderr %r" % (argv, words, status, out[:200], err))
    expect(within is None or took < within, "%s: refused in %.2f s, expected under %s s" % (argv, took, within))
    print("refused %-60s -> %s" % (" ".join(os.path.basename(a) if os.sep in a else a for a in argv[1:]), err.strip()))


def special_files(args, tmp, core):
    """A FIFO with no writer and a directory as --core or --exe: one line at once, never a hang."""
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    expect_refused(args, ["check", "--core", fifo], "not a regular file (a FIFO)", within=1)
    expect_refused(args, ["check", "--core", tmp], "not a regular file (a directory)", within=1)
    expect_refused(args, ["check", "--core", core, "--exe", fifo], "not a regular file (a FIFO)", within=1)
    expect_refused(args, ["check", "--core", core, "--exe", tmp], "not a regular file (a directory)", within=1)


def relative_exe(args, work, core):
    """--exe relative to the working directory: a bare name, ./name, ../dir/name."""
    sub = os.path.join(work, "sub")
    os.makedirs(sub, exist_ok=True)
    for cwd, exe in ((work, "scenario_seed_host"), (work, "./scenario_seed_host"),
                     (sub, "../scenario_seed_host"), (sub, "../sub/../scenario_seed_host")):
        out = subprocess.run([args.pytstates, "check", "--core", core, "--exe", exe, "--json"], cwd=cwd,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        expect(out.returncode == 1, "--exe %s from %s: exit %d, %r" % (exe, cwd, out.returncode, out.stderr))
        r = json.loads(out.stdout)
        expect(r["target"]["executable"] == os.path.join(work, "scenario_seed_host"), "--exe %s is the file in %s" % (exe, work), r)


def damaged_exe(args, tmp, work, core):
    """Copies of the executable that cannot stand for it: refused in one line, never used silently."""
    exe = os.path.join(work, "scenario_seed_host")
    with open(exe, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 32)
    cases = {"header-only": (data[:64], "program headers lie outside the file"),
             "cut-4096": (data[:4096], "truncated"),
             "flipped-phoff": (data[:32] + struct.pack("<Q", phoff ^ 0x4000000) + data[40:], "program headers lie outside the file")}
    for name, (content, words) in cases.items():
        bad = os.path.join(tmp, name)
        with open(bad, "wb") as f:
            f.write(content)
        expect_refused(args, ["check", "--core", core, "--exe", bad], words)
    nobuildid = os.path.join(tmp, "no-build-id")
    subprocess.run(["objcopy", "--remove-section", ".note.gnu.build-id", exe, nobuildid], check=True)
    expect_refused(args, ["check", "--core", core, "--exe", nobuildid], "has none")


def started_through_loader(args):
    """`ld.so PROGRAM`: --exe PROGRAM is the main program, accepted with one line saying how it was started."""
    code = 'import os, sys; print("FACTS {}"); print("READY", flush=True); sys.stdin.readline()'
    facts, core = scenario.take_core(["/lib64/ld-linux-x86-64.so.2", scenario.PYTHON, "-c", code], "gcore")
    try:
        status, out, err = run(args, ["check", "--core", core, "--exe", scenario.PYTHON, "--json"])
        expect(status == 0, "ld.so PROGRAM with --exe PROGRAM is accepted: %d %s" % (status, err))
        r = json.loads(out)
        expect(r["target"]["executable"] == scenario.PYTHON, "the executable is PROGRAM", r)
        expect(any("started through the dynamic loader" in w for w in r.get("warnings", [])), "one line says how it was started", r)
        expect(len(r["runtimes"]) == 1 and r["runtimes"][0]["interpreters"], "its runtime is read", r)
        expect_refused(args, ["check", "--core", core, "--exe", "/bin/ls"], "does not match")
    finally:
        scenario.cleanup(core)


def file_offset(core, addr):
    """The offset in the core file of a virtual address (PT_LOAD with file bytes)."""
    with open(core, "rb") as f:
        ehdr = f.read(64)
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        f.seek(phoff)
        for _ in range(phnum):
            p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack("<IIQQQQQQ", f.read(phentsize))
            if p_type == 1 and p_vaddr <= addr < p_vaddr + p_filesz:
                return p_offset + addr - p_vaddr
    raise AssertionError("address %#x is not in the core" % addr)


def patch_bytes(core, addr, data):
    with open(core, "r+b") as f:
        f.seek(file_offset(core, addr))
        f.write(data)


def patch(core, addr, value):
    patch_bytes(core, addr, struct.pack("<Q", value))


def rename_note(core, note_type, new_type):
    """Changes the type of every note of `note_type` in the core (hides NT_SIGINFO, say)."""
    with open(core, "r+b") as f:
        ehdr = f.read(64)
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, _, p_offset, _, _, p_filesz, _, _ = struct.unpack("<IIQQQQQQ", f.read(phentsize))
            if p_type != 4:
                continue
            pos = p_offset
            while pos + 12 <= p_offset + p_filesz:
                f.seek(pos)
                namesz, descsz, ntype = struct.unpack("<III", f.read(12))
                if ntype == note_type:
                    f.seek(pos + 8)
                    f.write(struct.pack("<I", new_type))
                pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4


def damaged_crash_core(args, tmp):
    """The seed's crash core, damaged: without NT_SIGINFO the crash comes from pr_cursig; cut short,
    or with a module file missing, the stack ends with a reason, never a crash or a hang."""
    work = os.path.join(tmp, "crash")
    os.makedirs(work)
    for name in os.listdir(args.scenarios):
        if name.startswith("scenario_seed_host") or name.startswith("seed_module"):
            shutil.copy2(os.path.join(args.scenarios, name), work)
    facts, core = scenario.take_core([os.path.join(work, "scenario_seed_host"), "svr2", "crash"], "crash")
    try:
        nosiginfo = os.path.join(tmp, "nosiginfo.core")
        shutil.copy(core, nosiginfo)
        rename_note(nosiginfo, 0x53494749, 0x7fffffff)
        status, out, err = run(args, ["check", "--core", nosiginfo, "--json"], timeout=60)
        r = json.loads(out)
        crash = r["target"]["crash"]
        expect(status == 1 and crash and crash["signal"] == 11 and crash["code"] is None and [f for f in crash["frames"] if not f.get("inlined")][0]["function"] == "take_gil",
               "without NT_SIGINFO the signal comes from pr_cursig", r)
        for frac in (0.5, 0.9):
            cut = os.path.join(tmp, "cutcrash.core")
            with open(core, "rb") as src, open(cut, "wb") as dst:
                dst.write(src.read(int(os.path.getsize(core) * frac)))
            status, out, err = run(args, ["check", "--core", cut, "--native"], timeout=60)
            expect(status in (0, 1, 2) and "Traceback" not in err and (status != 2 or err.count("\n") == 1),
                   "a crash core cut at %d%%: %d %r" % (frac * 100, status, err))
        os.remove(os.path.join(work, [n for n in os.listdir(work) if n.startswith("seed_module")][0]))
        status, out, err = run(args, ["check", "--core", core], timeout=60)
        crash_section = out.split("FINDINGS")[0]
        expect(status == 1 and "CRASH  LWP %d" % facts["worker_lwp"] in crash_section and "take_gil" in crash_section
               and "seed_module" in crash_section and ("without its CFI" in crash_section or "whose file is not at hand" in crash_section),
               "a module file missing: the crash stack says which frames were unwound blind:\n" + crash_section)
    finally:
        scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="pytstates-bad-")
    try:
        expect_refused(args, ["tstates", "--core", os.path.join(tmp, "missing")], "No such file")
        with open(os.path.join(tmp, "text"), "w") as f:
            f.write("not a core\n" * 100)
        expect_refused(args, ["tstates", "--core", os.path.join(tmp, "text")], "not an ELF file")
        expect_refused(args, ["check", "--core", "/bin/ls"], "not a core")
        expect_refused(args, ["tstates"], "no target")
        expect_refused(args, ["tstates", "--core", "x", "--frames", "many"], "frames")

        # a core of a process without Python
        facts, core = scenario.take_core(["/bin/sh", "-c", 'echo "FACTS {}"; echo READY; exec sleep 100'], "gcore")
        expect_refused(args, ["tstates", "--core", core], "no initialised CPython runtime")
        scenario.cleanup(core)

        # the seed's core: a wrong --exe, truncations, cyclic lists, a missing module file
        work = os.path.join(tmp, "copy")
        os.makedirs(work)
        built = args.scenarios
        for name in os.listdir(built):
            if name.startswith("scenario_seed_host") or name.startswith("seed_module"):
                shutil.copy2(os.path.join(built, name), work)
        facts, core = scenario.take_core([os.path.join(work, "scenario_seed_host"), "svr2", "pause"], "gcore")
        expect_refused(args, ["tstates", "--core", core, "--exe", "/bin/ls"], "does not match")
        status, out, err = run(args, ["check", "--core", core, "--exe", os.path.join(work, "scenario_seed_host"), "--json"])
        expect(status == 1, "the right --exe is accepted: %s" % err)
        relative_exe(args, work, core)
        damaged_exe(args, tmp, work, core)
        special_files(args, tmp, core)
        started_through_loader(args)
        damaged_crash_core(args, tmp)
        size = os.path.getsize(core)
        for frac in (0.001, 0.3, 0.7, 0.999):
            cut = os.path.join(tmp, "cut.core")
            with open(core, "rb") as src, open(cut, "wb") as dst:
                dst.write(src.read(int(size * frac)))
            status, out, err = run(args, ["check", "--core", cut])
            expect(status in (0, 1, 2) and "Traceback" not in err, "truncated at %.1f%%: status %d" % (frac * 100, status))
            if status == 2:
                expect(err.count("\n") == 1 and ("truncated" in err or "no thread" in err),
                       "truncated at %.1f%%: one line saying so: %r" % (frac * 100, err))

        r = json.loads(run(args, ["tstates", "--core", core, "--json"])[1])
        interp = r["runtimes"][0]["interpreters"][0]
        first = int(interp["tstates"][0]["address"], 16)
        # The fields' offsets from the DWARF of the suite's libpython (python3-dbg), as gdb reads them.
        exe = os.path.join(work, "scenario_seed_host")
        tstate_next = field_offset(exe, core, "PyThreadState", "next")
        interp_next = field_offset(exe, core, "PyInterpreterState", "next")
        cyclic = os.path.join(tmp, "cyclic.core")
        shutil.copy(core, cyclic)
        patch(cyclic, first + tstate_next, first)  # tstate->next = itself
        status, out, err = run(args, ["tstates", "--core", cyclic, "--json"], timeout=30)
        expect(status == 0, "a cyclic thread-state list: %s" % err)
        expect("cyclic" in out, "the cycle is noted:\n" + out[:3000])
        shutil.copy(core, cyclic)
        patch(cyclic, int(interp["address"], 16) + interp_next, int(interp["address"], 16))  # interp->next = itself
        status, out, err = run(args, ["tstates", "--core", cyclic], timeout=30)
        expect(status == 0 and "cyclic" in out, "a cyclic interpreter list: %d %s" % (status, err))
        shutil.copy(core, cyclic)
        patch(cyclic, first + tstate_next, 0xdeadbeef0)  # tstate->next = garbage
        status, out, err = run(args, ["check", "--core", cyclic], timeout=30)
        expect(status in (0, 1) and "unreadable" in out, "a garbage next pointer ends the list with a note: %d %s" % (status, err))

        # a module file replaced by another build after the core was taken
        module = [n for n in os.listdir(work) if n.startswith("seed_module")][0]
        other = [n for n in os.listdir(built) if n.startswith("types_b")][0]
        shutil.copy(os.path.join(built, other), os.path.join(work, module))
        status, out, err = run(args, ["check", "--core", core])
        expect(status == 1 and "build-id mismatch" in out and module in out and facts["deleted_tstate"] in out,
               "a module file that does not match the core is reported and not used:\n" + out[:3000])
        os.remove(os.path.join(work, module))
        status, out, err = run(args, ["check", "--core", core])
        expect(status == 1 and "seed_module" in out and "missing" in out and facts["deleted_tstate"] in out,
               "a missing module file is a warning, and the analysis still names the stale pointer:\n" + out[:3000])
        scenario.cleanup(core)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS bad input")


if __name__ == "__main__":
    main()
