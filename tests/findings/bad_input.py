#!/usr/bin/env python3
"""Bad input gets one clear line and exit status 2 (or a result with a note), never a crash or a
hang: missing, non-ELF and non-core files, a core without Python, a wrong --exe, truncated cores,
cyclic thread-state and interpreter lists patched into a real core, a module file missing."""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import findings_cases  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402


def run(args, argv, timeout=60):
    out = subprocess.run([args.pytstates] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")


def expect_refused(args, argv, words):
    status, out, err = run(args, argv)
    expect(status == 2 and out == "" and err.count("\n") == 1 and words in err and "Traceback" not in err,
           "%s: expected exit 2 and one line with %r; got %d, stdout %r, stderr %r" % (argv, words, status, out[:200], err))


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


def patch(core, addr, value):
    with open(core, "r+b") as f:
        f.seek(file_offset(core, addr))
        f.write(struct.pack("<Q", value))


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
        cyclic = os.path.join(tmp, "cyclic.core")
        shutil.copy(core, cyclic)
        patch(cyclic, first + 8, first)  # tstate->next = itself
        status, out, err = run(args, ["tstates", "--core", cyclic, "--json"], timeout=30)
        expect(status == 0, "a cyclic thread-state list: %s" % err)
        expect("cyclic" in out, "the cycle is noted:\n" + out[:3000])
        shutil.copy(core, cyclic)
        patch(cyclic, int(interp["address"], 16), int(interp["address"], 16))  # interp->next (3.11: offset 0) = itself
        status, out, err = run(args, ["tstates", "--core", cyclic], timeout=30)
        expect(status == 0 and "cyclic" in out, "a cyclic interpreter list: %d %s" % (status, err))
        shutil.copy(core, cyclic)
        patch(cyclic, first + 8, 0xdeadbeef0)  # tstate->next = garbage
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
