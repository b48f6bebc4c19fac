#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What production hands over, on real processes and real cores:
  replaced     a live process whose executable is deleted and whose libpython is replaced by
               another build after it started: the same report as before, files read through
               /proc/PID/map_files;
  namespace    Debian's python3.14 run in its own mount and PID namespaces (unshare) from a tree
               mounted only there: the same report as a core of it read with --sysroot;
  compressed   a core compressed with zstd, lz4, xz and gzip (the command-line tools, as
               systemd-coredump writes them): the same report as the plain core; truncated and
               corrupt streams refused in one line; nothing left in TMPDIR;
  debuginfod   a core whose executable, libpython and debug files are gone, fetched by build-id
               from a real debuginfod server on 127.0.0.1 (run in a network namespace with only
               the loopback interface): the same report as with the files in place;
  no-runtime   what the one line says when no runtime is found: a process without CPython, a
               core whose libpython is gone;
  layout-cache the DWARF answers cached per build-id: a second run says the cache answered and
               reports the same facts; a planted wrong entry for another file size, --no-cache and
               PYTSTATES_NO_CACHE=1 are not believed; the symbol tables' names kept the same way
               give the same blocked_on, planted wrong ones for another file are not believed;
  progress     the progress line: on a terminal (stderr a pty; PYTSTATES_PROGRESS_AFTER_MS=0
               instead of a second) it tells the decompression and is cleared before the end;
               stdout's JSON is the plain core's; with stderr a pipe there is none;
  compressed-trailing  a zstd stream holding a core followed by 20 GiB of zeros (frames
               concatenated, as a stream): the plain core's report, and a warning that names the
               core's end as where decoding stopped.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
import json_contract  # noqa: E402
import pyenv  # noqa: E402
import scenario  # noqa: E402
from findings_cases import expect  # noqa: E402

TOP = os.path.abspath(os.path.join(here, "..", ".."))
LIBPYTHON = "/usr/lib/x86_64-linux-gnu/" + scenario.LIBPYTHON  # the suite's


def summary(report):
    """Everything a report says about the program, none of how the files were found."""
    r = json.loads(json.dumps(report))
    for key in ("stopped_ms", "read_after_resume", "files", "namespace_pids", "root", "sysroot"):
        r["target"].pop(key, None)
    r.pop("warnings", None)
    for runtime in r.get("runtimes", []):  # whether pytstates' layout cache answered: a run's history
        runtime.pop("layout_cached", None)
    return r


def expect_same(a, b, what):
    sa, sb = summary(a), summary(b)
    if sa != sb:
        import difflib
        diff = difflib.unified_diff(json.dumps(sa, indent=1, sort_keys=True).splitlines(),
                                    json.dumps(sb, indent=1, sort_keys=True).splitlines(), lineterm="", n=4)
        print("\n".join(list(diff)[:120]))
    expect(sa == sb, what)


def files_by_module(report):
    return {f["module"]: f for f in report["target"]["files"]}


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, check=True).stdout.decode()
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def seed_copy(args, workdir):
    """The seed's service and its libpython, copied into workdir: argv and environment to run them."""
    for f in (os.path.join(args.scenarios, "scenario_seed_host"), LIBPYTHON):
        shutil.copy2(f, workdir)
    env = dict(scenario.offline_env(), LD_LIBRARY_PATH=workdir, PYTHONPATH=args.scenarios)
    return [os.path.join(workdir, "scenario_seed_host"), "svr2", "pause"], env


def pyenv_libpython():
    """pyenv's build of the suite's Python X.Y (3.11.7 beside Debian 12's 3.11, 3.13.0 beside 13's);
    NOT RUN (exit 77) where pyenv has no X.Y."""
    name, _ = pyenv.require(scenario.PYTHON_VERSION)
    lib = os.path.join(pyenv.prefix(name), "lib", scenario.LIBPYTHON)
    expect(os.path.exists(lib), "pyenv's CPython %s has no %s (the test replaces libpython with another build of it)" % (name, lib))
    return lib


def replaced(args):
    other_build = pyenv_libpython()  # before anything runs: not run here without it
    workdir = tempfile.mkdtemp(prefix="pytstates-replaced-")
    try:
        argv, env = seed_copy(args, workdir)
        with scenario.running(argv, workdir=workdir, env=env) as (proc, facts):
            target = ["check", "--json", "--pid", str(proc.pid)]
            status, before, _ = scenario.run_pytstates(args.pytstates, target)
            # A package upgrade while the service runs: the executable unlinked, libpython replaced
            # by another build (pyenv's) under the same name.
            os.unlink(argv[0])
            lib = os.path.join(workdir, scenario.LIBPYTHON)
            shutil.copy2(other_build, lib + ".new")
            os.rename(lib + ".new", lib)
            expect(build_id(lib) != files_by_module(before)[lib]["build_id"], "the file at libpython's path is another build now")
            status2, after, err = scenario.run_pytstates(args.pytstates, target)
            expect(status2 == status == 1, "both reports find the seed's stale pointer (exit 1): %s" % err)
            expect_same(before, after, "the report after the files changed on disk equals the one before")
            files = files_by_module(after)
            for path in (argv[0], lib):
                expect(files[path]["deleted"] and files[path]["via"] == "map_files",
                       "%s: read through /proc/PID/map_files, marked deleted" % path, after)
            _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(proc.pid)])
            expect("deleted or replaced on disk since the process mapped them: %s %s" % (argv[0], lib) in text,
                   "the text says which files were deleted or replaced:\n" + text[:2000])
            print(text.split("\n\n")[0])
            expect(scenario.still_answers(proc), "the service goes on after pytstates detached")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def python314_tree(args):
    out = subprocess.run([os.path.join(TOP, "scripts", "debian-python"), "3.14", args.python314_dir],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    expect(out.returncode == 0, "Debian's python3.14 is not available: " + out.stderr.decode(errors="replace"))
    return out.stdout.decode().strip().splitlines()[-1]


# Inside `unshare --mount --pid --fork`: the tree mounted on an empty directory (a tmpfs with a
# bind mount of each of the tree's directories), the scenario copied in, the test's directory
# mounted as /out (the working directory, where the kernel writes the core), then the scenario run
# with that directory as its root. The mounts exist only in that namespace (unshare makes them
# private).
NAMESPACE_SH = r'''
set -e
tree=$1; root=$2; out=$3; shift 3
mount -t tmpfs tmpfs "$root"
for d in "$tree"/*; do
  n=$(basename "$d")
  if [ -L "$d" ]; then cp -P "$d" "$root/$n"; else mkdir "$root/$n"; mount --bind "$d" "$root/$n"; fi
done
mkdir "$root/scenario" "$root/out"
mount --bind "$out" "$root/out"
cp "$@" "$root/scenario/"
ulimit -c unlimited
# Not exec'd: the namespace's init (this shell) ignores signals it has no handler for, SIGABRT too.
unshare --root="$root" --wd=/out /usr/bin/python3.14 /scenario/many_threads.py 3
'''


def namespace(args):
    tree = python314_tree(args)
    ok, pattern = scenario.kernel_core_pattern_ok()
    expect(ok, "kernel cores go to a pipe here (core_pattern %r); set it to 'core'" % pattern)
    root = tempfile.mkdtemp(prefix="pytstates-ns-root-")
    workdir = tempfile.mkdtemp(prefix="pytstates-ns-")
    live = os.path.join(TOP, "tests", "scenarios", "live")
    argv = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "sh", "-c", NAMESPACE_SH, "sh", tree, root, workdir,
            os.path.join(live, "many_threads.py"), os.path.join(live, "pause.py")]
    try:
        with scenario.running(argv, workdir=workdir) as (proc, facts):
            init = int(subprocess.run(["pgrep", "-P", str(proc.pid)], stdout=subprocess.PIPE).stdout.split()[0])
            pid = int(subprocess.run(["pgrep", "-P", str(init)], stdout=subprocess.PIPE).stdout.split()[0])
            expect(not os.path.exists(os.path.join(root, "usr", "bin", "python3.14")) and not os.path.exists("/usr/bin/python3.14"),
                   "no path the process maps exists here")
            # The kernel names a root in another mount namespace from that namespace's root mount, not
            # from ours: in a chroot (scripts/debian-root) the chroot's directory comes first, as it
            # does for the namespace's init (the shell, not chrooted), /CHROOT; outside one, /.
            # pytstates names the process's root as the kernel does (its maps are named so too).
            seen_root = os.path.join(os.readlink("/proc/%d/root" % init), root.lstrip("/"))
            status, report, err = scenario.run_pytstates(args.pytstates, ["check", "--json", "--pid", str(pid)])
            expect(status == 0, "pytstates --pid on the namespaced process: exit %d: %s" % (status, err))
            t = report["target"]
            expect(t["namespace_pids"] == [pid, facts["pid"]] and facts["pid"] != pid and t["root"] == seen_root
                   and t["executable"] == "/usr/bin/python3.14",
                   "pid %d is %d in its namespace, its root is %s, its executable /usr/bin/python3.14 (namespace_pids %s, "
                   "root %s, executable %s)" % (pid, facts["pid"], seen_root, t["namespace_pids"], t.get("root"), t["executable"]),
                   report)
            expect(all(f["via"] in ("map_files", "root") for f in t["files"] if f["file"]),
                   "every file read through /proc/PID/map_files or /proc/PID/root", report)
            tstates = {ts["address"]: ts for rt in report["runtimes"] for i in rt["interpreters"] for ts in i["tstates"]}
            expect(sorted(tstates) == sorted(th["tstate"] for th in facts["threads"]), "every thread state the scenario has", report)
            # native_thread_id is the namespace's id: no state made by a running thread is "made before a fork".
            expect(not any(ts.get("made_before_fork") for ts in tstates.values()), "no thread state made before a fork", report)
            expect(report["runtimes"][0]["layout"] == "dwarf", "python3.14-dbg's DWARF found under /proc/PID/root", report)
            _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--pid", str(pid)])
            print(text[:1500])
            # The same process as the kernel's core (the process's own paths in NT_FILE, as
            # systemd-coredump gets it), its files in place through --sysroot.
            os.kill(pid, signal.SIGABRT)
            proc.wait(timeout=120)
        core = os.path.join(workdir, "core")
        for _ in range(100):
            if os.path.exists(core):
                break
            time.sleep(0.1)
        expect(os.path.exists(core), "the kernel wrote the namespaced process's core into %s" % workdir)
        _, from_core, _ = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core, "--sysroot", tree],
                                                 expect_status=scenario.quiet_status("kernel"))
        # The kernel wrote the core from inside the namespace: its thread ids are the namespace's.
        ns = {t["lwp"]: t.get("namespace_lwp") for t in report["threads"]}
        expect(sorted(ns.values()) == sorted(t["lwp"] for t in from_core["threads"]),
               "each thread's id in the namespace (namespace_lwp) is the one the core holds", report)
        report = json.loads(json.dumps(report))
        report["target"]["pid"] = report["target"]["namespace_pids"][-1]
        for t in report["threads"]:
            t["lwp"] = t.pop("namespace_lwp")
        for ts in (ts for rt in report["runtimes"] for i in rt["interpreters"] for ts in i["tstates"]):
            ts["lwp"] = ns.get(ts["lwp"], ts["lwp"])
            if ts.get("made_by_lwp"):
                ts["made_by_lwp"] = ns.get(ts["made_by_lwp"], ts["made_by_lwp"])
        for r in (report, from_core):
            r["target"].pop("crash", None)
            r["target"].pop("kind", None)
            r["threads"] = sorted((dict(t, native_frames=None, debugger_thread=None) for t in r["threads"]), key=lambda t: t["lwp"])
        expect_same(report, from_core, "the live report equals the report of its core with the files in place")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def compressed(args):
    argv = [os.path.join(args.scenarios, "scenario_seed_host"), "svr2", "pause"]
    facts, core = scenario.take_core(argv, "gcore")
    tmp = tempfile.mkdtemp(prefix="pytstates-tmpdir-")
    # The progress lines (told once decoding takes a second: a loaded machine) are
    # production.progress's; here stderr is the one line of a refusal.
    env = dict(scenario.offline_env(), TMPDIR=tmp, PYTSTATES_PROGRESS_AFTER_MS="3600000")
    try:
        _, plain, _ = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core], expect_status=1)
        tools = {"zst": ["zstd", "-q", "-T0", "-f", core, "-o", core + ".zst"],
                 "lz4": ["lz4", "-q", "-f", core, core + ".lz4"],
                 "xz": ["sh", "-c", "xz -T0 -c '%s' > '%s.xz'" % (core, core)],
                 "gz": ["sh", "-c", "gzip -1 -c '%s' > '%s.gz'" % (core, core)]}
        for ext, cmd in tools.items():
            subprocess.run(cmd, check=True)
            packed = core + "." + ext
            status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", packed], env=env)
            expect(status == 1, "%s: exit 1 like the plain core: %s" % (packed, err))
            expect_same(plain, r, "the %s core gives the plain core's report" % ext)
            print("%s: %d bytes (plain %d): same report" % (ext, os.path.getsize(packed), os.path.getsize(core)))
            data = open(packed, "rb").read()
            bad = {"cut": data[:len(data) // 2], "magic only": data[:6],
                   "corrupt": bytes(b ^ 0x5a if 4096 <= i < 8192 else b for i, b in enumerate(data))}
            if ext == "zst":  # a frame header asking for a 2 GiB window (windowLog 31): refused, not allocated
                bad["2 GiB window"] = b"\x28\xb5\x2f\xfd\x00\xa8" + b"\xa8" * 64
            for what, content in bad.items():
                path = core + ".bad." + ext
                with open(path, "wb") as f:
                    f.write(content)
                status, _, err = scenario.run_pytstates(args.pytstates, ["check", "--core", path], env=env)
                lines = err.strip().splitlines()
                expect(status == 2 and len(lines) == 1 and path in lines[0], "%s %s core: exit 2, one line: %r" % (what, ext, err))
                print("  %s: %s" % (what, lines[0]))
            os.unlink(packed)
        expect(os.listdir(tmp) == [], "nothing left in TMPDIR: %s" % os.listdir(tmp))
    finally:
        scenario.cleanup(core)
        shutil.rmtree(tmp, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def debuginfod(args):
    """Outside: the core and the served directory; inside a network namespace: the server and pytstates."""
    workdir = tempfile.mkdtemp(prefix="pytstates-debuginfod-")
    try:
        argv, env = seed_copy(args, workdir)
        facts, core = scenario.take_core(argv, "gcore", workdir=workdir, env=env)
        baseline = os.path.join(workdir, "baseline.json")
        _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core], expect_status=1)
        with open(baseline, "w") as f:
            json.dump(text, f)
        served = os.path.join(workdir, "served")
        os.mkdir(served)
        lib = os.path.join(workdir, scenario.LIBPYTHON)
        bid = build_id(lib)
        debug = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
        expect(os.path.exists(debug), "python3-dbg's debug file of libpython: %s" % debug)
        # Every debug file the report used from this machine (python3-dbg's, libc6-dbg's) is
        # served; inside, /usr/lib/debug is hidden.
        used = {f["debug_file"] for f in text["target"]["files"] if (f["debug_file"] or "").startswith("/usr/lib/debug/")}
        expect(debug in used, "the report used libpython's debug file", text)
        for path in used:
            shutil.copy2(path, os.path.join(served, os.path.basename(os.path.dirname(path)) + os.path.basename(path)))
        for f in (argv[0], lib):  # the local copies go: only the server has them now
            shutil.move(f, served)
        out = subprocess.run(["unshare", "--net", "--mount", sys.executable, os.path.abspath(__file__),
                              "--pytstates", args.pytstates, "--scenarios", args.scenarios,
                              "debuginfod-inside", core, served, baseline, bid])
        expect(out.returncode == 0, "the debuginfod run inside the network namespace failed")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def debuginfod_inside(args):
    core, served, baseline, bid = args.extra
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    # This machine's debug files are hidden in this mount namespace: what is found comes from the server.
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/usr/lib/debug"], check=True)
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    db = os.path.join(os.path.dirname(served), "debuginfod.sqlite")
    log = open(os.path.join(os.path.dirname(served), "debuginfod.log"), "w+")
    server = subprocess.Popen(["debuginfod", "-F", "-p", str(port), "-d", db, "-t", "0", "-g", "0", "-v", served],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:  # until the scan has indexed libpython's debug file
            try:
                with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (url, bid), timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            expect(time.monotonic() < deadline and server.poll() is None, "debuginfod did not serve build-id %s in 120 s" % bid)
            time.sleep(0.5)
        cache = tempfile.mkdtemp(prefix="pytstates-debuginfod-cache-")
        env = dict(os.environ, DEBUGINFOD_URLS=url, DEBUGINFOD_CACHE_PATH=cache)
        with open(baseline) as f:
            expected = json.load(f)
        status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core], env=env)
        expect(status == 1, "pytstates with DEBUGINFOD_URLS=%s: exit %d: %s" % (url, status, err))
        print(err.strip())
        expect("pytstates: debuginfod: fetching" in err, "a progress line on stderr for each file fetched")
        expect_same(expected, r, "the report with files from debuginfod equals the one with the files in place")
        files = {os.path.basename(m): f for m, f in files_by_module(r).items()}
        for name in ("scenario_seed_host", scenario.LIBPYTHON):
            expect(files[name]["via"] == "debuginfod" and files[name]["file"].startswith(cache), "%s fetched into the cache" % name, r)
        expect(files[scenario.LIBPYTHON]["debug_file"].startswith(cache), "libpython's debug file fetched into the cache", r)
        # Again: from the cache, no transfer, no progress line.
        status, r2, err2 = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core], env=env)
        expect(status == 1 and "fetching" not in err2, "the second run reads debuginfod's cache: %s" % err2)
        expect_same(expected, r2, "the second run's report is the same")
        # --offline: nothing fetched, and the line says why and what would help.
        status, _, err3 = scenario.run_pytstates(args.pytstates, ["check", "--offline", "--core", core],
                                                 env=dict(env, DEBUGINFOD_CACHE_PATH=tempfile.mkdtemp()))
        expect(status == 2 and scenario.LIBPYTHON + " is loaded but its file cannot be read" in err3 and "DEBUGINFOD_URLS" in err3,
               "--offline: exit 2, the line names libpython and DEBUGINFOD_URLS: %r" % err3)
        print("--offline: " + err3.strip())
        log.seek(0)
        served_lines = [line.rstrip() for line in log if "/buildid/" in line and " 200 " in line]
        expect(any(bid in line and "debuginfo" in line for line in served_lines), "the server's log shows the debug file served")
        print("debuginfod log:\n  " + "\n  ".join(served_lines[:8]))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def no_runtime(args):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        status, _, err = scenario.run_pytstates(args.pytstates, ["tstates", "--pid", str(sleeper.pid)])
        expect(status == 2 and "does not run CPython" in err and len(err.strip().splitlines()) == 1,
               "a process without CPython: %r" % err)
        print(err.strip())
    finally:
        sleeper.kill()
        sleeper.wait()
    workdir = tempfile.mkdtemp(prefix="pytstates-noruntime-")
    try:
        argv, env = seed_copy(args, workdir)
        facts, core = scenario.take_core(argv, "gcore", workdir=workdir, env=env)
        os.unlink(os.path.join(workdir, scenario.LIBPYTHON))
        status, _, err = scenario.run_pytstates(args.pytstates, ["tstates", "--core", core])
        expect(status == 2 and scenario.LIBPYTHON + " is loaded but its file cannot be read" in err and "--sysroot" in err
               and "DEBUGINFOD_URLS" in err and len(err.strip().splitlines()) == 1, "a core whose libpython is gone: %r" % err)
        print(err.strip())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def layout_cache(args):
    argv = [os.path.join(args.scenarios, "scenario_seed_host"), "svr2", "pause"]
    facts, core = scenario.take_core(argv, "gcore")
    cache = tempfile.mkdtemp(prefix="pytstates-cache-")
    env = dict(scenario.offline_env(), XDG_CACHE_HOME=cache)
    env.pop("PYTSTATES_NO_CACHE", None)
    try:
        cmd = ["check", "--json", "--core", core]
        _, uncached, _ = scenario.run_pytstates(args.pytstates, cmd, expect_status=1)
        expect(not uncached["runtimes"][0]["layout_cached"], "the test's own environment does not cache")
        _, first, _ = scenario.run_pytstates(args.pytstates, cmd, expect_status=1, env=env)
        expect(first["runtimes"][0]["layout"] == "dwarf" and not first["runtimes"][0]["layout_cached"],
               "a first run reads DWARF", first["runtimes"][0])
        debug = files_by_module(first)[first["runtimes"][0]["module"]]["debug_file"]
        bid = build_id(debug)
        entry = os.path.join(cache, "pytstates", "dwarf", bid)
        expect(os.path.exists(entry), "an entry named by libpython's debug build-id: %s" % entry)
        _, second, _ = scenario.run_pytstates(args.pytstates, cmd, expect_status=1, env=env)
        expect(second["runtimes"][0]["layout_cached"], "the second run says the cache answered", second["runtimes"][0])
        expect(summary(dict(second, runtimes=[dict(r, layout_cached=False) for r in second["runtimes"]])) == summary(first),
               "the cached answers give the same report")
        _, text, _ = scenario.run_pytstates(args.pytstates, ["check", "--core", core], expect_status=1, env=env)
        expect("(layout from DWARF, answered by pytstates' cache)" in text, "the text says the cache answered", text[:2000])
        # The symbol tables' names of the pcs unwound (what each thread waits for): kept per module
        # build, the same threads[].blocked_on from them as read from the tables.
        symbols = os.path.join(cache, "pytstates", "symbols")
        names = sorted(os.listdir(symbols)) if os.path.isdir(symbols) else []
        expect(names, "the symbol tables' names kept under %s" % symbols)
        waits = lambda r: [(t["lwp"], t.get("blocked_on")) for t in r["threads"]]
        expect(any(b and b.get("function") for _, b in waits(uncached)) and waits(second) == waits(uncached),
               "the names from the cache give the same blocked_on", waits(second))
        # Entries written for another file (another size, same build-id), every name planted wrong:
        # ignored, the tables read again.
        for name in names:
            lines = open(os.path.join(symbols, name)).read().splitlines()
            head = lines[0].split(" ")
            head[3] = str(int(head[3]) + 1)
            with open(os.path.join(symbols, name), "w") as f:
                f.write("\n".join([" ".join(head)] + [l.split("\t")[0] + "\tplanted_wrong" for l in lines[1:]]) + "\n")
        _, r, _ = scenario.run_pytstates(args.pytstates, cmd, expect_status=1, env=env)
        expect(waits(r) == waits(uncached) and "planted_wrong" not in json.dumps(r), "an entry for another file is ignored", waits(r))
        for what, extra, run_env in (("--no-cache", ["--no-cache"], env), ("PYTSTATES_NO_CACHE=1", [], dict(env, PYTSTATES_NO_CACHE="1"))):
            _, r, _ = scenario.run_pytstates(args.pytstates, cmd + extra, expect_status=1, env=run_env)
            expect(not r["runtimes"][0]["layout_cached"] and summary(r) == summary(first), "%s: DWARF read again" % what)
        # An entry for a file of another size (a debug file rewritten under the same build-id), with
        # a wrong offset planted in it: ignored, DWARF read, the right report.
        lines = open(entry).read().splitlines()
        header = lines[0].rsplit(" ", 1)[0] + " 1"
        planted = [header] + [l.rsplit("\t", 1)[0] + "\t4096" if "\t_ts\tnext\t" in l else l for l in lines[1:]]
        expect(planted[1:] != lines[1:], "the entry holds PyThreadState.next", lines)
        with open(entry, "w") as f:
            f.write("\n".join(planted) + "\n")
        _, r, _ = scenario.run_pytstates(args.pytstates, cmd, expect_status=1, env=env)
        expect(not r["runtimes"][0]["layout_cached"] and summary(r) == summary(first), "an entry for another file size is ignored")
        print("cache entry %s: %d answers; second run answered by it" % (entry, len(lines) - 1))
    finally:
        scenario.cleanup(core)
        shutil.rmtree(cache, ignore_errors=True)


def compressed_trailing(args):
    argv = [os.path.join(args.scenarios, "scenario_seed_host"), "svr2", "pause"]
    facts, core = scenario.take_core(argv, "gcore")
    tmp = tempfile.mkdtemp(prefix="pytstates-tmpdir-")
    env = dict(scenario.offline_env(), TMPDIR=tmp)
    packed = core + ".zst"
    try:
        _, plain, _ = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core], expect_status=1)
        # The core's frame, then one frame of 1 GiB of zeros twenty times: what zstd -d gives back
        # is the core followed by 20 GiB of zeros, compressed from a stream (never on disk).
        zeros = subprocess.run("head -c 1G /dev/zero | zstd -q -c", shell=True, stdout=subprocess.PIPE, check=True).stdout
        with open(packed, "wb") as f:
            f.write(subprocess.run(["zstd", "-q", "-c", core], stdout=subprocess.PIPE, check=True).stdout)
            for _ in range(20):
                f.write(zeros)
        size = subprocess.run("zstd -d -c '%s' | wc -c" % packed, shell=True, stdout=subprocess.PIPE, check=True).stdout
        expect(int(size) == os.path.getsize(core) + 20 * 2**30, "the stream decodes to the core and 20 GiB more: %s" % size)
        status, r, err = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", packed], env=env)
        expect(status == 1, "exit 1 like the plain core: %s" % err)
        expect_same(plain, r, "the padded zstd core gives the plain core's report")
        want = "the compressed stream goes on past the core's end (byte %d, where its own headers end it): the rest was not decoded" % (
            os.path.getsize(core))
        expect(r.get("warnings") == plain.get("warnings", []) + [want], "the warning names the core's end: %r" % r.get("warnings"))
        expect(os.listdir(tmp) == [], "nothing left in TMPDIR: %s" % os.listdir(tmp))
        print("%s: %d compressed bytes, core %d bytes + 20 GiB: %s" % (packed, os.path.getsize(packed), os.path.getsize(core), want))
    finally:
        scenario.cleanup(core)
        if os.path.exists(packed):
            os.unlink(packed)
        shutil.rmtree(tmp, ignore_errors=True)


def run_with_pty_stderr(argv, env):
    """Runs argv with stderr on a pseudo-terminal and stdout on a pipe: (status, stdout, stderr bytes)."""
    import pty
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out = proc.stdout.read()
    proc.wait(timeout=300)
    os.close(master)
    return proc.returncode, out, err


def progress(args):
    argv = [os.path.join(args.scenarios, "scenario_seed_host"), "svr2", "pause"]
    facts, core = scenario.take_core(argv, "gcore")
    try:
        _, plain, _ = scenario.run_pytstates(args.pytstates, ["check", "--json", "--core", core], expect_status=1)
        subprocess.run(["zstd", "-q", "-f", core, "-o", core + ".zst"], check=True)
        env = dict(scenario.offline_env(), PYTSTATES_PROGRESS_AFTER_MS="0")
        status, out, err = run_with_pty_stderr([args.pytstates, "check", "--json", "--core", core + ".zst"], env)
        expect(status == 1, "exit 1 like the plain core: %r" % err)
        expect_same(plain, json_contract.loads(out), "stdout holds the plain core's JSON, nothing else")
        expect(err.startswith(b"\rpytstates: decompressing " + (core + ".zst").encode()) and err.endswith(b"\r\x1b[K"),
               "on a terminal: the progress line, then cleared: %r" % err[:300])
        print("stderr on a terminal: %r" % err[:200])
        piped = subprocess.run([args.pytstates, "check", "--json", "--core", core + ".zst"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
        expect(piped.returncode == 1 and b"\r" not in piped.stderr and b"\x1b" not in piped.stderr,
               "stderr a pipe: no progress line: %r" % piped.stderr[:300])
    finally:
        scenario.cleanup(core)


CASES = {"replaced": replaced, "namespace": namespace, "compressed": compressed, "debuginfod": debuginfod,
         "debuginfod-inside": debuginfod_inside, "no-runtime": no_runtime, "layout-cache": layout_cache,
         "compressed-trailing": compressed_trailing, "progress": progress}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--scenarios", required=True, help="the built findings scenarios")
    p.add_argument("--python314-dir", default=os.path.join(tempfile.gettempdir(), "pytstates-python314"))
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("extra", nargs="*")
    args = p.parse_args()
    CASES[args.case](args)
    print("PASS production " + args.case)


if __name__ == "__main__":
    main()
