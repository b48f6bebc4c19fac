#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bad input gets one clear line and exit status 2 (or a result with a note), never a crash or a
hang: missing, non-ELF and non-core files, a FIFO or a directory, a core without Python, a wrong,
relative, truncated or corrupt --exe, a program started as `ld.so PROGRAM`, truncated cores,
cyclic thread-state and interpreter lists patched into a real core, a module file missing.
Part `bounds`: every input bounded: a compressed core whose headers claim 16 GiB (a decoding bomb)
refused before anything is decoded, --max-decoded; --history given a FIFO, /dev/zero, a directory,
a file too large, and a history of 100,000 program counters answered in seconds; a module path in
a core that is now a FIFO, never opened."""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import json_contract  # noqa: E402
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
        r = json_contract.loads(out.stdout)
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
        r = json_contract.loads(out)
        expect(r["target"]["executable"] == scenario.PYTHON, "the executable is PROGRAM", r)
        expect(any("started through the dynamic loader" in w for w in r.get("warnings", [])), "one line says how it was started", r)
        expect(len(r["runtimes"]) == 1 and r["runtimes"][0]["interpreters"], "its runtime is read", r)
        expect_refused(args, ["check", "--core", core, "--exe", "/bin/ls"], "does not match")
    finally:
        scenario.cleanup(core)


def moved_exe(args, tmp):
    """A program moved since its core was written (CPython linked into it, as Debian's python3.X):
    without --exe the one line says to give it; with --exe FILE the runtime is read, the pages gcore
    left out (Py_Version in .rodata) served from FILE, not from the path the core names."""
    moved = os.path.join(tmp, "py")
    shutil.copy(scenario.PYTHON, moved)
    code = ('import json, threading; t = threading.Thread(target=threading.Event().wait, daemon=True); t.start(); '
            'print("FACTS " + json.dumps({"lwps": sorted([threading.get_native_id(), t.native_id])})); print("READY", flush=True); '
            'import sys; sys.stdin.readline()')
    facts, core = scenario.take_core([moved, "-c", code], "gcore")
    try:
        os.rename(moved, moved + ".moved")
        expect_refused(args, ["check", "--core", core], "give the program's file with --exe FILE")
        status, out, err = run(args, ["check", "--core", core, "--exe", moved + ".moved", "--json"])
        expect(status == 0, "--exe the moved program: %d %s" % (status, err))
        r = json_contract.loads(out)
        lwps = sorted(ts["lwp"] for i in r["runtimes"][0]["interpreters"] for ts in i["tstates"])
        expect(r["runtimes"][0]["version"].startswith(scenario.PYTHON_VERSION) and lwps == facts["lwps"],
               "the runtime of the moved program is read: its thread states on LWPs %s" % facts["lwps"], r)
        print("moved program: --exe %s reads CPython %s, thread states on LWPs %s" % (
            os.path.basename(moved) + ".moved", r["runtimes"][0]["version"], lwps))
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
        r = json_contract.loads(out)
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
            if status != 2:  # the kernel writes its notes first: what the rest holds, the truncation said first
                lines = out.splitlines()
                first = next((l for l in lines if l.startswith(("warning: ", "CRASH"))), "")
                expect(first == "warning: the core is truncated: some memory is missing" and "CRASH  LWP %d" % facts["worker_lwp"] in out
                       and lines[-1].startswith("pytstates: CRASH SIGSEGV LWP %d" % facts["worker_lwp"]),
                       "a crash core cut at %d%%: the truncation first, the crash, the summary last:\n%s" % (frac * 100, out[-3000:]))
                print("a crash core cut at %d%%: exit %d; %s; %s" % (frac * 100, status, first, lines[-1]))
        os.remove(os.path.join(work, [n for n in os.listdir(work) if n.startswith("seed_module")][0]))
        status, out, err = run(args, ["check", "--core", core], timeout=60)
        crash_section = out.split("FINDINGS")[0]
        expect(status == 1 and "CRASH  LWP %d" % facts["worker_lwp"] in crash_section and "take_gil" in crash_section
               and "seed_module" in crash_section and ("without its CFI" in crash_section or "whose file is not at hand" in crash_section),
               "a module file missing: the crash stack says which frames were unwound blind:\n" + crash_section)
    finally:
        scenario.cleanup(core)


# --- bounds -------------------------------------------------------------------------------------

def rle_frame(total, byte):
    """A zstd frame of RLE blocks (128 KiB of `byte` each, 4 bytes apiece) that decodes to `total`
    bytes: 16 GiB in 512 KiB."""
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out += bytes([0x00, 7 << 3])  # no content size, no checksum, a 128 KiB window
    block = 128 << 10
    while total > 0:
        n = min(block, total)
        total -= n
        out += struct.pack("<I", (n << 3) | (1 << 1) | (1 if total == 0 else 0))[:3] + bytes([byte])
    return bytes(out)


def decoding_bomb(core, claim, out, rle=None, byte=0x41):
    """The real core, its last PT_LOAD stretched so that the headers claim `claim` bytes, compressed
    by zstd and followed by a frame of RLE blocks that decodes to `rle` bytes (the rest of the
    claim when None)."""
    with open(core, "rb") as f:
        data = bytearray(f.read())
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    loads = [phoff + i * phentsize for i in range(phnum) if struct.unpack_from("<I", data, phoff + i * phentsize)[0] == 1]
    last = max(loads, key=lambda at: struct.unpack_from("<Q", data, at + 8)[0])
    p_offset, = struct.unpack_from("<Q", data, last + 8)
    p_memsz, = struct.unpack_from("<Q", data, last + 40)
    struct.pack_into("<Q", data, last + 32, claim - p_offset)
    struct.pack_into("<Q", data, last + 40, max(p_memsz, claim - p_offset))
    with open(out + ".plain", "wb") as f:
        f.write(data)
    subprocess.run(["zstd", "-q", "-f", out + ".plain", "-o", out], check=True)
    os.remove(out + ".plain")
    with open(out, "ab") as f:
        f.write(rle_frame(claim - len(data) if rle is None else rle, byte))


def timed(argv, env=None, timeout=60):
    """Runs pytstates: (status, stdout, stderr, wall seconds, CPU seconds). On a machine that other
    work loads, the CPU time says what pytstates did; the wall time, that it did not wait."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=env)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace"), wall, cpu


def refused_at_once(argv, words, env=None, cpu_within=2, wall_within=30):
    """Exit 2, one line on stderr matching the regex `words`, nothing on stdout; in little CPU time
    (nothing decoded or read whole) and without waiting (a FIFO's open would block)."""
    status, out, err, wall, cpu = timed(argv, env)
    expect(status == 2 and out == "" and err.count("\n") == 1 and re.search(words, err) and "Traceback" not in err,
           "%s: expected exit 2 and one line matching %r; got %d, stdout %r, stderr %r" % (argv[1:], words, status, out[:200], err))
    expect(cpu < cpu_within and wall < wall_within,
           "%s: refused after %.2f s of CPU (%.2f s wall), expected under %s s (%s s)" % (argv[1:], cpu, wall, cpu_within, wall_within))
    print("refused (%.2f s CPU, %.2f s wall): %s" % (cpu, wall, err.strip()))


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def decoding_bounds(args, tmp, core):
    """A .zst whose core claims 16 GiB and whose stream goes on with non-zero RLE blocks: refused
    from its headers, before a byte is decoded, whatever --max-decoded allows less; a claim over the
    space free in $TMPDIR is refused by default; a core within the bound decodes, telling how far
    once it has taken a second."""
    gib = 1 << 30
    bomb = os.path.join(tmp, "bomb.zst")
    decoding_bomb(core, 16 * gib, bomb)
    expect(os.path.getsize(bomb) < 4 << 20, "the bomb is small: %d bytes" % os.path.getsize(bomb))
    scratch = os.path.join(tmp, "scratch")
    os.makedirs(scratch)
    env = dict(scenario.offline_env(), TMPDIR=scratch)

    def refused(argv, words, within):
        refused_at_once([args.pytstates] + argv, words, env, cpu_within=within)

    # 8 GiB allowed: decoding up to it would take tens of seconds; the headers' 16 GiB is refused at once.
    refused(["check", "--core", bomb, "--max-decoded", "8G"],
            re.escape("bomb.zst: the core needs 16.0 GiB decoded, more than --max-decoded (8.0 GiB): set TMPDIR or --max-decoded"), 5)
    # By default, the space free in $TMPDIR: a claim beyond it (and a stream that would fill it).
    beyond = os.path.join(tmp, "beyond.zst")
    claim = free_bytes(scratch) + 16 * gib
    decoding_bomb(core, claim, beyond, rle=64 << 20)
    refused(["check", "--core", beyond],
            r"beyond\.zst: the core needs [0-9.]+ [GT]iB decoded, \$TMPDIR \(%s\) has [0-9.]+ [MGT]iB free: set TMPDIR or --max-decoded$"
            % re.escape(scratch), 5)
    for bad in ("lots", "-1G", "0", "1e9", "12Q"):
        refused(["check", "--core", bomb, "--max-decoded=" + bad], re.escape("--max-decoded needs a size") + ".*" + re.escape(bad), 5)
    # A stream that is not ELF is not decoded at all.
    junk = os.path.join(tmp, "junk.zst")
    with open(junk, "wb") as f:
        f.write(rle_frame(16 * gib, 0x41))
    refused(["check", "--core", junk], "junk.zst: not an ELF file", 5)
    # A real core within the bound decodes: 1 GiB claimed, zeros (skipped, so the disk sees none of
    # them). Once decoding has taken a second (0 ms here: PYTSTATES_PROGRESS_AFTER_MS) stderr says
    # where it goes and when it is done, stderr a pipe or not.
    sparse = os.path.join(tmp, "sparse.zst")
    decoding_bomb(core, gib, sparse, byte=0)
    out = subprocess.run([args.pytstates, "tstates", "--core", sparse, "--max-decoded", "1.5GiB"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=200, env=dict(env, PYTSTATES_PROGRESS_AFTER_MS="0"))
    err = out.stderr.decode(errors="replace").splitlines()
    told = [l for l in err if "sparse.zst is zstd-compressed" in l and "decompressing it into an unlinked temporary file in " + scratch in l]
    done = [l for l in err if re.search(r"sparse\.zst: 1\.0 GiB decompressed in [0-9.]+ s$", l)]
    expect(out.returncode == 0 and "the process does not run CPython" in out.stdout.decode(errors="replace") and told and done,
           "the decoded core is read (a shell's: no Python), and stderr told the decoding: %d %r" % (out.returncode, err))
    print("1 GiB of zeros decoded; stderr: %r" % err)


def habits(args, tmp):
    """pystack's and py-spy's habits: the target as the one argument (a file is a core, digits a
    pid), short options, -V; and with -j/--json an error is also one JSON object on stdout (exit 2),
    so that `| jq` reads an answer, valid against docs/error.schema.json."""
    code = 'import json, os, sys; print("FACTS " + json.dumps({"pid": os.getpid()})); print("READY", flush=True); sys.stdin.readline()'
    with scenario.running([scenario.PYTHON, "-c", code]) as (proc, facts):
        core = scenario.gcore(proc.pid, os.path.join(tmp, "habits"))
        by_option = json_contract.loads(run(args, ["tstates", "--core", core, "--json"])[1])
        by_position = json_contract.loads(run(args, ["tstates", core, "-j"])[1])
        expect(by_position == by_option and by_position["target"]["pid"] == facts["pid"],
               "pytstates tstates CORE -j is --core CORE --json", by_position)
        status, out, err = run(args, ["check", str(proc.pid), "-nj"])
        live = json_contract.loads(out)
        expect(status == 0 and live["target"]["kind"] == "live" and live["target"]["pid"] == facts["pid"]
               and any(t.get("native_frames") for t in live["threads"]), "check PID -nj: the live process, native stacks: %d %s" % (status, err))
        status, out, _ = run(args, ["tstates", "-p", str(proc.pid), "-f", "1", "-j"])
        expect(status == 0 and json_contract.loads(out)["target"]["pid"] == facts["pid"], "-p PID -f 1 -j")
    os.unlink(core)
    status, out, _ = run(args, ["-V"])
    expect(status == 0 and out.startswith("pytstates "), "-V is the version: %r" % out)
    for argv, words in ((["check", "-j", os.path.join(tmp, "absent")], "No such file"),
                        (["check", "--json", "--bogus"], "--bogus"),
                        (["tstates", "-j"], "no target"),
                        (["check", "-j", "-p", "1", "-e", "/bin/ls"], "--exe is for a core")):
        status, out, err = run(args, argv)
        error = json_contract.loads(out)["error"]["message"] if out.strip() else None
        expect(status == 2 and err.count("\n") == 1 and words in err and error == err.strip()[len("pytstates: "):],
               "%s: exit 2, one line, and the same as a JSON error on stdout: %d %r %r" % (argv, status, out, err))
        print("-j error: %s -> %s" % (" ".join(argv[1:]), out.strip()))


def no_python_core(args):
    """A core of a process that runs no Python (sleep, killed by SIGABRT from this script): not a
    refusal but a report, as pystack gives one: its crash, its thread and native stack, what the
    core says of the process (NT_PRPSINFO), and "does not run CPython" as a line. Held against
    what the shell said of itself and against gdb's reading of the same core."""
    facts, core = scenario.take_core(["/bin/sh", "-c", 'echo "FACTS {\\"pid\\": $$, \\"ppid\\": $PPID}"; echo READY; exec sleep 100'],
                                     "kernel")
    try:
        status, out, err = run(args, ["check", "--core", core, "--native"])
        expect(status == 1 and not err and "CRASH" in out and "the process does not run CPython" in out
               and "NATIVE STACKS" in out and "Traceback" not in out
               and out.splitlines()[-1] == "pytstates: CRASH SIGABRT LWP %d; no CPython runtime \u2014 no findings; exit 1" % facts["pid"],
               "a core without Python: a report with its crash and native stacks, exit 1 (a crash); got %d:\n%s%s" % (status, out, err))
        status, text, _ = run(args, ["check", "--core", core, "--json"])
        report = json_contract.loads(text)
        process = report["target"]["process"]
        crash = report["target"]["crash"]
        expect(report["runtimes"] == [] and "does not run CPython" in report["no_runtime"], "no runtime, said why", report)
        expect(process["command"] == "sleep" and process["arguments"].split() == ["sleep", "100"]
               and process["ppid"] == os.getpid() == facts["ppid"] and process["uid"] == os.getuid() and report["target"]["pid"] == facts["pid"],
               "NT_PRPSINFO: the program, its arguments, its parent (this script), its uid", process)
        expect(crash["signal_name"] == "SIGABRT" and crash["lwp"] == facts["pid"] and crash.get("sender_pid") == os.getpid(),
               "the crash: SIGABRT sent by this script", crash)
        # gdb's reading: the one thread, and its innermost function.
        seen = subprocess.run(["gdb", "-q", "-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex", "info threads", "-ex", "bt 1",
                               "/bin/sleep", core], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode(errors="replace")
        lwps = [int(m) for m in re.findall(r"LWP (\d+)", seen)]
        top = re.search(r"^#0\s+(?:0x[0-9a-f]+ in )?([A-Za-z_][A-Za-z0-9_]*)", seen, re.M)
        ours = [t["lwp"] for t in report["threads"]]
        expect(lwps and sorted(set(lwps)) == ours and top and crash["frames"] and crash["frames"][0]["function"].endswith(top.group(1)),
               "the thread and its innermost function as gdb reads them: %s, %s; ours %s, %s" % (
                   lwps, top and top.group(1), ours, crash["frames"][:1]), seen)
        print("a core without Python: %s, crash %s from pid %d, frame #0 %s (gdb: %s)" % (
            process, crash["signal_name"], crash["sender_pid"], crash["frames"][0]["function"], top.group(1)))
    finally:
        scenario.cleanup(core)


def special_history(args, tmp, core):
    """--history is bounded like --core: special files and directories refused before they are
    opened, at most a saved history's size read; one line and exit 2 at once."""
    fifo = os.path.join(tmp, "history.fifo")
    os.mkfifo(fifo)
    for path, words in ((fifo, "not a regular file (a FIFO)"), ("/dev/zero", "not a regular file (a device)"),
                        ("/dev/urandom", "not a regular file (a device)"), (tmp, "not a regular file (a directory)")):
        refused_at_once([args.pytstates, "check", "--core", core, "--history", path],
                        re.escape("cannot read the history file %s: %s" % (path, words)))
    huge = os.path.join(tmp, "huge.json")
    with open(huge, "wb") as f:
        f.truncate(1 << 30)  # sparse: a GiB of nothing
    refused_at_once([args.pytstates, "check", "--core", core, "--history", huge],
                    re.escape("cannot read the history file %s: larger than a saved history may be (256 MiB)" % huge))


def long_history(args, tmp, core, facts):
    """A saved history (the format py-tstates-record save writes) whose stale thread state's life
    holds 100,000 program counters, none named yet, in real code of the process: check answers in
    seconds (only what the report tells is named, and at most so many pcs), and says what it left
    unnamed."""
    _, r, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core, "--native", "--json"], expect_status=1)
    pcs = set()

    def walk(o):
        if isinstance(o, dict):
            if isinstance(o.get("pc"), str):
                pcs.add(int(o["pc"], 16))
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(r["threads"])
    expect(len(pcs) >= 5, "the core's stacks give real pcs", r["threads"])
    base = sorted(pcs)
    many = [base[i % len(base)] + 2 * (i // len(base)) for i in range(100000)]  # near real code, most distinct
    tstate = facts["deleted_tstate"]
    events = [{"event": "created", "frames": [], "function": "PyThreadState_New", "key": None, "lwp": facts["worker_lwp"],
               "ms": 1.0, "pcs": ["%#x" % pc for pc in many[:50000]], "seq": 1, "tstate": tstate}]
    for n in range(500):  # uses of 100 pcs each: every one kept (the limits allow them)
        events.append({"event": "used", "frames": [], "function": "PyEval_RestoreThread", "key": None, "lwp": facts["worker_lwp"],
                       "ms": 2.0 + n, "pcs": ["%#x" % pc for pc in many[50000 + 100 * n:50100 + 100 * n]], "seq": 2 + n,
                       "tstate": tstate})
    history = {"cannot": [], "dropped": 0, "events": events, "executable": r["target"]["executable"], "hits": len(events),
               "limits": {"lifecycle_per_tstate": 1000, "tstates": 4096, "uses_per_tstate": 1000}, "pid": facts["pid"],
               "pytstates_history": 1, "recorded": len(events), "watched": []}
    saved = os.path.join(tmp, "long-history.json")
    with open(saved, "w") as f:
        json.dump(history, f, indent=1)
    status, out, err, wall, cpu = timed([args.pytstates, "check", "--core", core, "--history", saved, "--json"], scenario.offline_env(),
                                        timeout=200)
    h = json_contract.loads(out)
    stale = [f for f in h["findings"] if f["code"] == "stale-tstate" and f["tstate"] == tstate]
    expect(status == 1 and stale and stale[0].get("history"), "the stale finding carries the history", h["findings"])
    told = stale[0]["history"]
    expect(len(told) == len(events) and all({int(f["pc"], 16) for f in t["frames"]} == {int(pc, 16) for pc in e["pcs"]}
                                            for t, e in zip(told, events)),
           "every event and pc of its last life is in the report", [len(told)])
    named = sum(1 for e in told for f in e["frames"] if f["function"])
    expect(0 < named and any("more are given by address only" in w for w in h.get("warnings", [])),
           "some frames named, the rest said to be by address (%d named)" % named, h.get("warnings"))
    expect(cpu < 20, "check --history with 100,000 pcs took %.1f s of CPU (%.1f s wall), expected seconds" % (cpu, wall))
    print("a history of 100,000 pcs (%d bytes): check answered after %.1f s of CPU (%.1f s wall), %d frames named" %
          (os.path.getsize(saved), cpu, wall, named))


def fifo_module(args, tmp):
    """A module the core names, replaced by a FIFO after the core was taken: stat'ed and refused,
    never opened (a writer blocked on it stays blocked)."""
    libdir = os.path.join(tmp, "lib")
    os.makedirs(libdir)
    lib = os.path.join(libdir, "libcopy.so")
    shutil.copy("/lib/x86_64-linux-gnu/libz.so.1", lib)
    code = ('import ctypes, sys; ctypes.CDLL(%r); print("FACTS {}"); print("READY", flush=True); sys.stdin.readline()' % lib)
    facts, core = scenario.take_core([scenario.PYTHON, "-c", code], "gcore")
    try:
        os.remove(lib)
        os.mkfifo(lib)
        opened = []
        writer = threading.Thread(target=lambda: opened.append(os.open(lib, os.O_WRONLY)), daemon=True)
        writer.start()
        status, out, err = run(args, ["tstates", "--core", core], timeout=60)
        time.sleep(0.2)
        expect(status == 0 and not opened, "the FIFO in the module's place was not opened: %d %r %r" % (status, opened, err))
        expect("libcopy.so" in out, "the module is named in the report:\n" + out[:3000])
        reader = os.open(lib, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer go
        writer.join(10)
        os.close(reader)
        for fd in opened:
            os.close(fd)
        print("a FIFO where the core's module was: not opened; the report says:\n%s" %
              "\n".join(l for l in out.splitlines() if "libcopy" in l))
    finally:
        scenario.cleanup(core)


def bounds(args, tmp):
    facts, shell = scenario.take_core(["/bin/sh", "-c", 'echo "FACTS {}"; echo READY; exec sleep 100'], "gcore")
    try:
        decoding_bounds(args, tmp, shell)
    finally:
        scenario.cleanup(shell)
    fifo_module(args, tmp)
    work = os.path.join(tmp, "seed")
    os.makedirs(work)
    for name in os.listdir(args.scenarios):
        if name.startswith("scenario_seed_host") or name.startswith("seed_module"):
            shutil.copy2(os.path.join(args.scenarios, name), work)
    facts, core = scenario.take_core([os.path.join(work, "scenario_seed_host"), "svr2", "pause"], "gcore")
    try:
        special_history(args, tmp, core)
        long_history(args, tmp, core, facts)
    finally:
        scenario.cleanup(core)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True)
    p.add_argument("part", nargs="?", choices=("main", "bounds"), default="main")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="pytstates-bad-")
    if args.part == "bounds":
        try:
            bounds(args, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("PASS bad input: bounds")
        return
    try:
        expect_refused(args, ["tstates", "--core", os.path.join(tmp, "missing")], "No such file")
        with open(os.path.join(tmp, "text"), "w") as f:
            f.write("not a core\n" * 100)
        expect_refused(args, ["tstates", "--core", os.path.join(tmp, "text")], "not an ELF file")
        expect_refused(args, ["check", "--core", "/bin/ls"], "not a core")
        expect_refused(args, ["tstates"], "no target")
        expect_refused(args, ["tstates", "--core", "x", "--frames", "many"], "frames")

        no_python_core(args)
        habits(args, tmp)

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
        moved_exe(args, tmp)
        damaged_crash_core(args, tmp)
        size = os.path.getsize(core)
        for frac in (0.001, 0.3, 0.7, 0.999):
            cut = os.path.join(tmp, "cut.core")
            with open(core, "rb") as src, open(cut, "wb") as dst:
                dst.write(src.read(int(size * frac)))
            status, out, err = run(args, ["check", "--core", cut])
            expect(status in (0, 1, 2) and "Traceback" not in err, "truncated at %.1f%%: status %d" % (frac * 100, status))
            if status == 2:
                expect(err.count("\n") == 1 and "the core is truncated" in err,
                       "truncated at %.1f%%: one line saying so first: %r" % (frac * 100, err))
                print("truncated at %.1f%%: exit 2, %s" % (frac * 100, err.strip()))
            else:  # what it still holds, the truncation said first (before any section) and the summary last
                lines = out.splitlines()
                warnings = [i for i, l in enumerate(lines) if l.startswith("warning: ")]
                sections = [i for i, l in enumerate(lines) if l.startswith(("CRASH", "HANG", "FINDINGS", "No findings", "CPython", "OS THREADS"))]
                expect(warnings and lines[warnings[0]] == "warning: the core is truncated: some memory is missing"
                       and sections and warnings[0] < sections[0] and lines[-1].startswith("pytstates: ") and lines[-1].endswith("exit %d" % status),
                       "truncated at %.1f%%: the truncation first, the summary last:\n%s" % (frac * 100, out[-3000:]))
                print("truncated at %.1f%%: exit %d, %s; %s" % (frac * 100, status, lines[warnings[0]], lines[-1]))

        r = json_contract.loads(run(args, ["tstates", "--core", core, "--json"])[1])
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
