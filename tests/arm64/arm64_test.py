#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""arm64 cores analysed on this x86_64 machine: real aarch64 programs of the arm64 tree of this
machine's Debian release (Debian 12: python3.11; Debian 13: python3.13) run under
qemu-aarch64-static (tests/lib/arm64.py), their guest cores read with --sysroot ROOT, held against
what each program said about itself and against gdb-multiarch on the same core (threads by their
pthread_t, thread states walked through pythonX.Y-dbg's DWARF, pthread key slots in glibc's struct
pthread through libc6-dbg's DWARF and the host's libthread_db, the crash frame's arguments).

  threads DWARF|NODWARF   pythonX.Y with threads in Event.wait and sleep
  seed DWARF|NODWARF      the seed's crash cross-compiled for arm64 (two pybind11 ABIs, the stale
                          key value take_gil crashes on)
  notes                   the threads core with NT_ARM_TLS (tpidr_el0 per thread, the kernel's
                          layout: one 8-byte register set per thread, owner "LINUX") and NT_FILE
                          (fs/binfmt_elf.c's layout: count, page size, {start, end, page offset}
                          per mapping, then the names) added, as real arm64 kernels write them,
                          from the qemu process's own /proc/PID/maps (the guest's files mapped at
                          the guest's addresses): the same report, every thread's struct pthread
                          from its tpidr_el0
"""
import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import arm64  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect, findings  # noqa: E402

THREADS = os.path.join(TOP, "tests", "scenarios", "arm64", "threads.py")
FINDINGS = os.path.join(TOP, "tests", "scenarios", "findings")


def pytstates(args, core, tree, extra=()):
    status, report, err = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core, "--sysroot", tree] + list(extra))
    expect(status in (0, 1), "pytstates exited %d: %s" % (status, err))
    return status, report


def gdb_view(tree, exe, core, keys=(), solib_dirs=()):
    """gdb-multiarch's walk of the thread states and, for `keys`, every thread's slot values."""
    os.environ["PYTSTATES_GDB_KEYS"] = ",".join(str(k) for k in keys)
    out = arm64.gdb_multiarch(tree, exe, core, ["source " + os.path.join(TOP, "tests", "lib", "gdb_cpython.py")], solib_dirs)
    walk = re.search(r"^GDB-CPYTHON (.*)$", out, re.M)
    expect(walk is not None, "gdb-multiarch walked no thread states:\n" + out[-3000:])
    slots = re.search(r"^GDB-KEYS (.*)$", out, re.M)
    expect(not keys or slots is not None, "gdb-multiarch read no key slots:\n" + out[-3000:])
    return json.loads(walk.group(1)), (json.loads(slots.group(1)) if slots else {})


def check_against_gdb(report, walk, slots):
    """Every thread state gdb-multiarch finds, with its thread, and every key slot it reads."""
    ours = {t["address"]: t for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"]}
    theirs = {t["address"]: t for i in walk for t in i["tstates"]}
    expect(sorted(ours) == sorted(theirs), "the thread states gdb-multiarch walks: %s" % sorted(theirs), report)
    for address, t in theirs.items():
        mine = ours[address]
        expect(mine["lwp"] == t["native_thread_id"] and mine["thread_id"] == t["thread_id"],
               "tstate %s: LWP %s, pthread %s as gdb-multiarch reads them" % (address, t["native_thread_id"], t["thread_id"]), report)
        top = mine["frames"][0]["function"] if mine["frames"] else None
        expect(top == t["top"], "tstate %s: innermost code %s as gdb-multiarch reads it" % (address, t["top"]), report)
    rows = {str(r["lwp"]): r for r in report["threads"]}
    for lwp, values in slots.items():
        row = rows[lwp]
        for key, value in values.items():
            key = int(key)
            if row.get("autotss_key") == key:
                mine = row["autotss_tstate"] or "0x0"
            else:
                mine = "0x0"
                for rec in report["internals"]:
                    if rec["tls_key"] == key:
                        mine = next((v["tstate"] for v in rec["tls_values"] if str(v["lwp"]) == lwp), "0x0")
            expect(mine == value, "LWP %s key %d: %s as gdb-multiarch reads glibc's struct pthread" % (lwp, key, value), report)
    print("gdb-multiarch and pytstates agree on %d thread states and %d key slots" % (
        len(theirs), sum(len(v) for v in slots.values())))


def check_threads_facts(facts, report):
    ours = {t["address"]: t for rt in report["runtimes"] for i in rt["interpreters"] for t in i["tstates"]}
    rows = {r["lwp"]: r for r in report["threads"]}
    for t in facts["threads"]:
        mine = ours.get(t["tstate"])
        expect(mine is not None and mine["lwp"] == t["lwp"] and mine["thread_id"] == t["pthread"],
               "%s: tstate %s of LWP %d" % (t["name"], t["tstate"], t["lwp"]), report)
        expect(mine["frames"] and mine["frames"][0]["function"] == t["function"], "%s in %s" % (t["name"], t["function"]), report)
        row = rows[t["lwp"]]
        expect(row["pthread"] == t["pthread"] and row["autotss_tstate"] == t["autotss"],
               "%s: pthread %s, PyGILState slot %s" % (t["name"], t["pthread"], t["autotss"]), report)


def threads_case(args, tree, mode):
    extra = ["--no-dwarf"] if mode == "nodwarf" else []
    workdir = tempfile.mkdtemp(prefix="pytstates-arm64-")
    try:
        facts, core = arm64.take_core([arm64.python(tree), THREADS], workdir=workdir)
        status, report = pytstates(args, core, tree, extra)
        rt = report["runtimes"][0]
        # Without DWARF: the built-in table, and on 3.13+ _Py_DebugOffsets over it.
        nodwarf = "table" if arm64.version(tree) == "3.11" else "debug_offsets"
        expect(report["target"]["arch"] == "aarch64" and rt["layout"] == ("dwarf" if mode == "dwarf" else nodwarf),
               "an aarch64 core, layout from %s" % mode, report)
        expect(not any(n.startswith("layout:") for n in rt.get("notes", [])), "no layout disagreement", report)
        expect(not any("unknown" in n for n in rt.get("notes", [])), "no layout field unknown", report)
        if arm64.version(tree) != "3.11":  # 3.12+: _Py_tss_tstate, from the symbol or PyThreadState_GetUnchecked's code
            expect(all(r["current_source"] == "_Py_tss_tstate" for r in report["threads"]) and
                   not any("TLS access" in w for w in report.get("warnings", []) + rt.get("notes", [])),
                   "every thread's _Py_tss_tstate read", report)
        check_threads_facts(facts, report)
        walk, slots = gdb_view(tree, arm64.python(tree), core, keys=[report["threads"][0]["autotss_key"]])
        check_against_gdb(report, walk, slots)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def build_seed(tree, outdir):
    """The seed's host (-fabi-version=2, -no-pie for gdb-multiarch: see arm64.gdb_multiarch) and
    its module, cross-compiled against the tree's libpython with DWARF."""
    compile_, link = arm64.compile_flags(tree)
    common = ["aarch64-linux-gnu-g++", "-std=c++17", "-g", "-O1", "-w", "-idirafter", "/usr/include", "-I" + FINDINGS] + compile_
    host = common + ["-fabi-version=2", "-no-pie", "-o", os.path.join(outdir, "scenario_seed_host"),
                     os.path.join(FINDINGS, "seed_host.cpp")] + link + ["-lpthread"]
    module = common + ["-shared", "-fPIC", "-fvisibility=hidden", "-o", os.path.join(outdir, "seed_module" + arm64.extension_suffix(tree)),
                       os.path.join(FINDINGS, "seed_module.cpp")]
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for c in (host, module)]
    for p in procs:
        out, _ = p.communicate(timeout=600)
        expect(p.returncode == 0, "cross-compiling the seed failed:\n" + out.decode(errors="replace")[-3000:])


def seed_case(args, tree, mode):
    extra = ["--no-dwarf"] if mode == "nodwarf" else []
    workdir = tempfile.mkdtemp(prefix="pytstates-arm64-seed-")
    try:
        bindir = os.path.join(workdir, "bin")
        os.makedirs(bindir)
        build_seed(tree, bindir)
        rundir = os.path.join(workdir, "run")
        facts, core = arm64.take_core([os.path.join(bindir, "scenario_seed_host"), "svr2", "crash"], workdir=rundir,
                                      env={"PYTHONHOME": "/usr"}, expect_signal=signal.SIGSEGV)
        status, report = pytstates(args, core, tree, extra)
        expect(status == 1 and report["target"]["arch"] == "aarch64", "exit 1 on an aarch64 core", report)
        stale = findings(report, "stale-tstate", "error")
        expect(len(stale) == 1 and stale[0]["lwp"] == facts["worker_lwp"] and stale[0]["tstate"] == facts["deleted_tstate"]
               and stale[0]["sources"] == ["pybind11 key %d (%s)" % (facts["module_key"], facts["module_id"])],
               "one stale-tstate: the worker, the deleted thread state, the module's key", report)
        expect(len(findings(report, "internals-split", "warning")) == 1, "the split of the two ABIs", report)
        crash = report["target"]["crash"]
        expect(crash and crash["lwp"] == facts["worker_lwp"] and crash["signal_name"] == "SIGSEGV" and crash["explained_by"] == [0],
               "the crash: SIGSEGV on the worker, explained by the stale-tstate", report)
        records = {r["id"]: r for r in report["internals"]}
        for key, rid in ((facts["host_key"], facts["host_id"]), (facts["module_key"], facts["module_id"])):
            expect(rid in records and records[rid]["tls_key"] == key, "record %s with key %d" % (rid, key), report)
        walk, slots = gdb_view(tree, os.path.join(bindir, "scenario_seed_host"), core,
                               keys=[facts["host_key"], facts["module_key"], report["threads"][0]["autotss_key"]], solib_dirs=[bindir])
        check_against_gdb(report, walk, slots)
        if mode == "dwarf":
            # gdb's backtrace of the crashing thread, inline frames included: 3.11's take_gil is
            # frame 0; 3.13's is frame 3, under the inlined atomics (_Py_atomic_load_ptr_relaxed,
            # whose `frame`/`info frame` say "saved pc = <not saved>"), with its tstate argument.
            out = arm64.gdb_multiarch(tree, os.path.join(bindir, "scenario_seed_host"), core,
                                      # the crashing thread by its LWP: qemu 10's cores list it in creation order, not first
                                      ["python [t.switch() for t in gdb.selected_inferior().threads() if t.ptid[1] == %d]" % crash["lwp"],
                                       "bt 8"], [bindir])
            m = re.search(r"^#(\d+) .*\btake_gil \(tstate=(?:tstate@entry=)?(0x[0-9a-f]+)", out, re.M)
            ours = next((f for f in crash["frames"] if f["function"] == "take_gil"), None)
            expect(m is not None and ours is not None and m.group(2) == ours["parameters"]["tstate"] == facts["deleted_tstate"],
                   "take_gil's tstate as gdb-multiarch prints it: %s" % (m.group(0) if m else out[-2000:]), report)
            print("gdb-multiarch: take_gil(tstate=%s) in frame #%s, the pointer pytstates names" % (m.group(2), m.group(1)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# -- synthetic notes ------------------------------------------------------------------------------

NT_FILE = 0x46494C45
NT_ARM_TLS = 0x401


def note(owner, ntype, desc):
    name = owner.encode() + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(name), len(desc), ntype) + pad(name) + pad(desc)


def parse_notes(data):
    out, pos = [], 0
    while pos + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
        name = data[pos + 12:pos + 12 + namesz].rstrip(b"\0").decode()
        desc_at = pos + 12 + (namesz + 3) // 4 * 4
        out.append((name, ntype, data[desc_at:desc_at + descsz]))
        pos = desc_at + (descsz + 3) // 4 * 4
    return out


def add_notes(core, tls_by_lwp, mappings):
    """Rewrites the core's PT_NOTE at its end with NT_ARM_TLS after each NT_PRSTATUS and one NT_FILE."""
    with open(core, "r+b") as f:
        data = bytearray(f.read())
        phoff, = struct.unpack_from("<Q", data, 32)
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
        for i in range(phnum):
            at = phoff + i * phentsize
            p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, at)
            if p_type != 4:
                continue
            blob = b""
            for owner, ntype, desc in parse_notes(bytes(data[p_offset:p_offset + p_filesz])):
                if ntype in (NT_ARM_TLS, NT_FILE):
                    continue  # added again below
                blob += note(owner, ntype, desc)
                if ntype == 1:  # NT_PRSTATUS: pr_pid at 32 on aarch64
                    lwp, = struct.unpack_from("<i", desc, 32)
                    blob += note("LINUX", NT_ARM_TLS, struct.pack("<Q", tls_by_lwp[lwp]))
            page = 4096
            files = struct.pack("<QQ", len(mappings), page)
            names = b""
            for start, end, offset, path in mappings:
                files += struct.pack("<QQQ", start, end, offset // page)
                names += path.encode() + b"\0"
            blob += note("CORE", NT_FILE, files + names)
            end = (len(data) + 7) // 8 * 8
            data += b"\0" * (end - len(data)) + blob
            struct.pack_into("<Q", data, at + 8, end)
            struct.pack_into("<Q", data, at + 32, len(blob))
        f.seek(0)
        f.write(data)


def notes_case(args, tree):
    workdir = tempfile.mkdtemp(prefix="pytstates-arm64-notes-")
    try:
        maps = {}

        def look(proc):
            # qemu maps the guest's files at the guest's own addresses: its maps are the guest's NT_FILE.
            with open("/proc/%d/maps" % proc.pid) as f:
                maps["lines"] = f.read().splitlines()

        facts, core = arm64.take_core([arm64.python(tree), THREADS], workdir=workdir, after_ready=look)
        _, plain = pytstates(args, core, tree)
        mappings = []
        for line in maps["lines"]:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith(tree + "/") and not parts[5].endswith("qemu-aarch64-static"):
                start, end = (int(x, 16) for x in parts[0].split("-"))
                mappings.append((start, end, int(parts[2], 16), parts[5][len(tree):]))
        expect(len(mappings) > 5, "the guest's file mappings from qemu's /proc/PID/maps: %d" % len(mappings))
        size = int(re.search(r"\$1 = (\d+)", arm64.gdb_multiarch(tree, arm64.python(tree), core, ["p sizeof(struct pthread)"])).group(1))
        tls = {t["lwp"]: int(t["pthread"], 16) + size for t in facts["threads"]}  # tpidr_el0: just above struct pthread
        add_notes(core, tls, mappings)
        _, noted = pytstates(args, core, tree)
        expect(not any("NT_FILE" in w for w in noted.get("warnings", [])), "no word of a missing NT_FILE", noted)
        expect(all(f["via"] in ("sysroot", "path") for f in noted["target"]["files"] if f["file"]), "files from NT_FILE's names", noted)
        check_threads_facts(facts, noted)
        for r in (plain, noted):
            r.pop("warnings", None)
            r["target"].pop("files", None)
        # Without NT_FILE the executable is named by AT_EXECFN, the path qemu was given (in the
        # tree); NT_FILE names it as the guest does.
        plain = json.loads(json.dumps(plain).replace(json.dumps(tree)[1:-1] + "/usr/bin/", "/usr/bin/"))
        if json.dumps(plain, sort_keys=True) != json.dumps(noted, sort_keys=True):
            import difflib
            print("\n".join(list(difflib.unified_diff(json.dumps(plain, indent=1, sort_keys=True).splitlines(),
                                                       json.dumps(noted, indent=1, sort_keys=True).splitlines(), lineterm="", n=3))[:80]))
        expect(json.dumps(plain, sort_keys=True) == json.dumps(noted, sort_keys=True),
               "the report with NT_ARM_TLS and NT_FILE equals the one without them")
        print("NT_ARM_TLS for %d threads (struct pthread = tpidr_el0 - %d) and NT_FILE with %d mappings: the same report"
              % (len(tls), size, len(mappings)))
        # NT_ARM_TLS is what gives the thread pointer: one off by a page moves that thread's pthread.
        main = facts["threads"][-1]
        moved_tls = dict(tls)
        moved_tls[main["lwp"]] += 4096
        add_notes(core, moved_tls, mappings)
        _, moved = pytstates(args, core, tree)
        row = [r for r in moved["threads"] if r["lwp"] == main["lwp"]][0]
        expect(row["pthread"] == hex(int(main["pthread"], 16) + 4096), "the pthread follows NT_ARM_TLS's tpidr_el0", moved)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("case", choices=["threads", "seed", "notes"])
    p.add_argument("mode", nargs="?", choices=["dwarf", "nodwarf"], default="dwarf")
    args = p.parse_args()
    try:
        tree, _ = arm64.root()
    except arm64.Arm64Error as e:
        print("FAIL: the arm64 tree cannot be had: %s" % e)
        return 1
    if args.case == "threads":
        threads_case(args, tree, args.mode)
    elif args.case == "seed":
        seed_case(args, tree, args.mode)
    else:
        notes_case(args, tree)
    print("PASS arm64 %s %s" % (args.case, args.mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
