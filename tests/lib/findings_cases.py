# SPDX-License-Identifier: Apache-2.0
"""What each findings scenario (tests/scenarios/findings/) must produce, asserted against what the
scenario printed about itself. Used for cores (tests/findings) and live processes (tests/live)."""
import json
import os
import threading

import scenario


def all_tstates(report):
    return {ts["address"]: ts for rt in report["runtimes"] for i in rt["interpreters"] for ts in i["tstates"]}


def findings(report, code, severity=None):
    return [f for f in report["findings"] if f["code"] == code and (severity is None or f["severity"] == severity)]


def expect(cond, what, report=None):
    if not cond:
        if report is not None:
            print(json.dumps(report, indent=1)[:8000])
        raise AssertionError(what)


def pyenv_libpython(version):
    """The pyenv build's libpython of a version such as 3.12.1: NOT RUN (exit 77) when pyenv has no
    such version here; a failure naming the file when the version is there without it."""
    import pyenv
    minor = ".".join(version.split(".")[:2])
    path = os.path.join(pyenv.require_prefix(version), "lib", "libpython%s.so.1.0" % minor)
    expect(os.path.exists(path), "pyenv's CPython %s has no shared libpython (%s)" % (version, path))
    return path


def argv(scenarios, case, crash=False):
    if case == "greenlets":
        return ["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "live", "greenlets.py")]
    if case.startswith("dlopen-tls-"):
        return [os.path.join(scenarios, "scenario_dlopen_tls_host"), pyenv_libpython(case[len("dlopen-tls-"):])]
    if case == "two-abis":
        return ["/usr/bin/python3", os.path.join(scenarios, "two_abis.py")]
    if case == "seed-held":  # crashes on its own, holding the GIL with another state
        return [os.path.join(scenarios, "scenario_seed_host"), "svr2", "crash-held"]
    if case.startswith("seed-"):
        return [os.path.join(scenarios, "scenario_seed_host"), case.split("-")[1], "crash" if crash else "pause"]
    if case == "first-repro":
        return [os.path.join(scenarios, "scenario_first_repro_host"), "crash" if crash else "pause"]
    if case == "abort-repro":  # aborts on its own: no pause mode
        return [os.path.join(scenarios, "scenario_first_repro_abort_host"), "abort"]
    if case == "shared-gil":
        return [os.path.join(scenarios, "scenario_shared_host"), "gil"]
    if case == "dlmopen":  # the suite's libpython, loaded twice
        return [os.path.join(scenarios, "scenario_dlmopen_host"), scenario.LIBPYTHON]
    return [os.path.join(scenarios, "scenario_%s_host" % case)]


def after_ready(case, kind):
    """take_core's hook for a case: the seed-held crash keeps what the program says until it dies
    (its stderr goes to the same pipe) as facts["said"], where CPython writes a fatal error."""
    if case == "seed-held" and kind == "crash":
        def keep(proc, facts):
            # Through the buffered reader read_facts used: what it already holds (the fatal error
            # can come with READY) is not on the pipe any more, and communicate() reads the pipe.
            watchdog = threading.Timer(120, proc.kill)
            watchdog.start()
            try:
                facts["said"] = proc.stdout.read().decode(errors="replace")
            finally:
                watchdog.cancel()
        return keep
    return None


def with_internals(run):
    """Installs the `internals` runner the checks use."""
    global check_internals
    check_internals = run


def check_seed(mode, facts, check, kind, signal=11, top_function="take_gil"):
    """check(args) runs pytstates check on the target with extra args; returns (status, output).
    signal, top_function: how a crash dies, and where (check_crash)."""
    status, r = check(["--json"])
    ids = {rec["id"]: rec for rec in r["internals"]}
    expect(set(ids) == {facts["host_id"], facts["module_id"]}, "two internals records, by ID", r)
    host, module = ids[facts["host_id"]], ids[facts["module_id"]]
    expect(host["tls_key"] == facts["host_key"] and module["tls_key"] == facts["module_key"], "TLS keys", r)
    expect(any(m.endswith("/scenario_seed_host") for m in host["modules"]), "host ID attributed to the host", r)
    expect(any("seed_module" in m for m in module["modules"]), "module ID attributed to seed_module", r)
    expect(len(findings(r, "internals-split", "warning")) == 1, "internals-split", r)
    if mode == "svr1":
        expect(status == 0 and not [f for f in r["findings"] if f["severity"] == "error"], "svr1: no error", r)
        expect(facts["deleted_tstate"] not in [v["tstate"] for v in module["tls_values"]], "svr1: module key clean", r)
        return
    expect(status == 1, "exit status 1 on an error finding", r)
    expect(facts["deleted_tstate"] not in all_tstates(r), "the deleted tstate is in no list", r)
    expect({"lwp": facts["worker_lwp"], "tstate": facts["deleted_tstate"]} in
           [{"lwp": v["lwp"], "tstate": v["tstate"]} for v in module["tls_values"]],
           "the module's key holds the deleted tstate on the worker", r)
    source = "pybind11 key %d (%s)" % (facts["module_key"], facts["module_id"])
    hits = [f for f in findings(r, "stale-tstate", "error")
            if f["lwp"] == facts["worker_lwp"] and f["tstate"] == facts["deleted_tstate"] and source in f["message"]]
    expect(len(hits) == 1 and hits[0]["sources"] == [source],
           "one stale-tstate names the worker, the freed pointer and the module's key as its only source", r)
    if kind != "crash":
        expect("freed" in hits[0]["message"], "the second look says freed", r)
    status, text = check([])
    expect(status == 1 and "stale-tstate" in text and facts["deleted_tstate"] in text
           and "LWP %d" % facts["worker_lwp"] in text, "text output names the pointer and the LWP\n" + text)
    if kind == "crash":
        check_crash(r, text, facts["worker_lwp"], signal, top_function, facts["deleted_tstate"], {"stale-tstate"}, "tstate")
    else:
        expect(r["target"]["crash"] is None, "no crash section for a process that did not crash", r)


def check_seed_held(facts, check, kind):
    """The seed's crash with the GIL held by another state of the crashing thread: file 2's own
    state (held_tstate) holds the GIL when the module's acquire takes the stale one. The crashed
    thread waits for nothing: the text opens with CRASH, and no deadlock runs through it.

    How it dies depends on CPython: up to 3.12 PyEval_AcquireThread enters take_gil with the stale
    state first and faults reading its freed memory (SIGSEGV); 3.13's calls _PyThreadState_Attach,
    which checks first that the thread has no current state and, since this thread has file 2's,
    aborts with "Fatal Python error: _PyThreadState_Attach: non-NULL old thread state" (SIGABRT)
    before any wait. The program's own stderr (facts["said"]) must agree."""
    lwp, held = facts["worker_lwp"], facts["held_tstate"]
    fatal = [line.strip() for line in facts.get("said", "").splitlines() if line.startswith("Fatal Python error: ")]
    aborts = tuple(int(x) for x in scenario.PYTHON_VERSION.split(".")) >= (3, 13)
    expect(fatal == (["Fatal Python error: _PyThreadState_Attach: non-NULL old thread state"] if aborts else []),
           "the program's CPython %s %s: it printed %r" % (scenario.PYTHON_VERSION, "aborts in _PyThreadState_Attach"
                                                           if aborts else "faults in take_gil", facts.get("said", "")[-2000:]))
    check_seed("svr2", facts, check, "crash", *((6, "_PyThreadState_Attach") if aborts else (11, "take_gil")))
    status, r = check(["--json"])
    interp = r["runtimes"][0]["interpreters"][0]
    expect(interp["gil_holder"] == held and held in all_tstates(r) and all_tstates(r)[held]["lwp"] == lwp,
           "the GIL is held by file 2's own state %s, on the crashing thread" % held, r)
    through = [f for f in findings(r, "deadlock") if any(step["lwp"] == lwp for step in f.get("cycle", []))]
    expect(not through, "no deadlock through the crashed thread LWP %d: %s" % (lwp, [f["message"] for f in through]), r)
    crash = r["target"]["crash"]
    entering = crash.get("entering") or {}
    if aborts:
        # The "old thread state" of the fatal error: file 2's, the thread's current one; the
        # thread aborted before take_gil, so it was entering no wait.
        rows = [row for row in r["threads"] if row["lwp"] == lwp]
        expect(rows and rows[0]["current_tstate"] == held, "LWP %d's current thread state is file 2's %s" % (lwp, held), r)
        expect(not entering, "an abort before take_gil enters no wait: %s" % entering, r)
        expect(crash.get("sender_pid") == facts["pid"] and crash.get("fatal_error") == fatal[0]
               and (crash.get("abort") or {}).get("kind") == "fatal-error",
               "SIGABRT sent by the process itself, with the fatal error it printed, read from the core", r)
    else:
        expect(entering.get("kind") == "gil" and entering.get("held_by") == lwp,
               "the crash says what the thread was entering: the GIL, which it holds itself: %s" % entering, r)
    status, text = check([])
    sections = [line for line in text.split("\n")[1:] if line and not line.startswith(" ")]
    expect(sections and sections[0].startswith("CRASH  LWP %d" % lwp), "the text opens with CRASH:\n" + text[:3000])
    said = " ".join(text.split("\n\n")[1].split())
    if aborts:
        expect(fatal[0] in said and "it was entering" not in said, "CRASH shows the fatal error and no wait:\n" + text[:3000])
        expect("the old thread state is this thread's current one, %s (it holds the GIL)" % held in said,
               "CRASH names the fatal error's old thread state, file 2's %s:\n%s" % (held, text[:3000]))
    else:
        expect("it was entering take_gil" in said and "while this thread holds the GIL with %s" % held in said and
               "had it not taken SIGSEGV, it would have waited for itself" in said, "CRASH tells the wait it was entering:\n" + text[:3000])
    print("CRASH of LWP %d: %s%s" % (lwp, crash["signal_name"], ", " + crash["fatal_error"] if crash.get("fatal_error") else ""))


def check_entering_gil(r, text, section):
    """A crash entering take_gil: what the thread would have done is what the GIL's state says,
    the state the same report gives (`GIL: free`: it would have taken it; held by LWP n: it would
    wait for LWP n), never a wait for a GIL nobody holds."""
    entering = r["target"]["crash"].get("entering") or {}
    if entering.get("kind") != "gil":
        return
    said = " ".join(section.split())
    states = {i["gil"] for rt in r["runtimes"] for i in rt["interpreters"]}
    if states == {"free"}:
        expect(entering.get("held_by") is None and "it would have taken the GIL, which is free" in said
               and "would wait for the GIL" not in said and "GIL: free" in text,
               "the GIL is free (interpreters: %s): the crash says take_gil would have taken it:\n%s" % (states, section))
    elif entering.get("held_by") is not None and entering["held_by"] != r["target"]["crash"]["lwp"]:
        expect("wait for the GIL held by LWP %d" % entering["held_by"] in said,
               "the GIL is held by LWP %d: the crash says take_gil would wait for it:\n%s" % (entering["held_by"], section))
    print("CRASH entering take_gil, the GIL %s: %s" % ("/".join(sorted(states)), said[said.find("it was entering"):][:160]))


def check_crash(r, text, lwp, signal, top_function, pointer, codes, parameter):
    """The crash section: the thread, the signal, the innermost function, and the findings whose
    pointer that thread's frames hold, named as the parameter the function was handed."""
    crash = r["target"]["crash"]
    expect(crash is not None and crash["lwp"] == lwp and crash["signal"] == signal, "the crash: LWP %d, signal %d" % (lwp, signal), r)
    # The function the crashing pc is in: the innermost frame that is not inlined into another, or
    # one of the frames inlined there (3.13's take_gil crashes in calls inlined into it,
    # _PyThreadState_MustExit and the like; Debian 13's 3.13 inlines tstate_delete_common into
    # _PyThreadState_DeleteCurrent).
    frames = crash["frames"]
    names = [f["function"] for f in frames]
    if signal == 6:
        # CPython's fatal error: abort() under _Py_FatalErrorFunc, called by the function that failed.
        expect("_Py_FatalErrorFunc" in names and names[names.index("_Py_FatalErrorFunc") + 1:][:1] == [top_function],
               "the fatal error comes from %s: %s" % (top_function, names[:12]), r)
    else:
        physical = next((i for i, f in enumerate(frames) if not f.get("inlined")), None)
        expect(physical is not None and top_function in names[:physical + 1],
               "the crash's innermost function is %s" % top_function, r)
    explained = [r["findings"][i] for i in crash["explained_by"]]
    expect({f["code"] for f in explained} == codes and all(f["tstate"] == pointer for f in explained),
           "the crash is explained by %s on %s" % (sorted(codes), pointer), r)
    expect("%s=%s" % (parameter, pointer) in crash["explanation"], "the explanation names the parameter", r)
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("CRASH  ")]
    sections = [i for i, line in enumerate(lines) if line.startswith(("FINDINGS", "No findings", "CPython "))]
    expect(starts and sections and starts[0] < sections[0], "the crash section comes first:\n" + text[:2000])
    first = lines[starts[0]]
    expect(first.startswith("CRASH  LWP %d" % lwp) and ("SIGSEGV" if signal == 11 else "SIGABRT") in first,
           "the crash line names the thread and the signal:\n" + first)
    section = "\n".join(lines[starts[0]:sections[0]])
    expect(top_function in section and pointer in section, "the crash section shows the frame and the pointer:\n" + section)
    check_entering_gil(r, text, section)
    # Without --native too, the eval-loop frames of the crash carry the Python frames they run:
    # the crashing thread's thread state's, innermost first (all of them: the crash's stack is not
    # cut by --frames, the thread state's is, so they compare as far as both go).
    runs = [ts["frames"] for rt in r["runtimes"] for i in rt["interpreters"] for ts in i["tstates"] if ts.get("lwp") == lwp and ts["frames"]]
    merged = [(p["function"], p["line"]) for f in frames for p in f.get("python", [])]
    if runs:
        both = min(len(merged), len(runs[0]))
        expect(merged and merged[:both] == [(p["function"], p["line"]) for p in runs[0][:both]],
               "the crash's eval-loop frames carry the thread's Python frames: %s" % merged, r)
        expect("Python: %s (" % merged[0][0] in section, "the crash section names the Python function:\n" + section)


def check_orphan(facts, check, kind):
    status, r = check(["--json"])
    expect(status == scenario.quiet_status(kind) and (r["target"]["crash"] is not None) == bool(scenario.quiet_status(kind)),
           "no error finding: exit status %d, a crash only for a %s core" % (status, kind), r)
    ts = all_tstates(r)
    orphan = ts.get(facts["orphan_tstate"])
    expect(orphan and orphan["lwp"] is None and orphan["parked"] and orphan["made_by_lwp"] is None,
           "orphan listed, running nowhere, its maker gone", r)
    expect(orphan["thread_id"] == facts["orphan_pthread"], "orphan's thread_id", r)
    # The main thread released the GIL for good (PyEval_SaveThread, its result never used): its
    # state runs nowhere; the main thread made it.
    main = ts[facts["main_tstate"]]
    expect(main["parked"] and main["lwp"] is None and main["made_by_lwp"] == facts["main_lwp"],
           "main tstate parked, made by the main LWP", r)
    hits = findings(r, "orphan-tstate", "warning")
    expect([f["tstate"] for f in hits] == [facts["orphan_tstate"]], "exactly one orphan-tstate, the orphan", r)


def check_shared_gil(facts, check, kind):
    check_shared(facts, check, kind, extra_foreign=True)
    status, r = check(["--json"])
    interp = r["runtimes"][0]["interpreters"][0]
    expect(interp["gil_holder"] == facts["copier_tstate"], "the copier holds the GIL", r)
    hits = findings(r, "tls-mismatch", "error")
    expect([f["lwp"] for f in hits] == [facts["copier_lwp"]], "tls-mismatch on the copier, which holds the GIL", r)
    expect(facts["shared_tstate"] in hits[0]["message"] and facts["copier_tstate"] in hits[0]["message"],
           "the message names both thread states", r)


def check_shared(facts, check, kind, extra_foreign=False):
    status, r = check(["--json"])
    expect(status == 1, "exit status 1", r)
    hits = findings(r, "shared-tstate", "error")
    expect([f["tstate"] for f in hits] == [facts["shared_tstate"]], "shared-tstate names the copied tstate", r)
    expect(str(facts["owner_lwp"]) in hits[0]["message"] and str(facts["copier_lwp"]) in hits[0]["message"],
           "both LWPs in the message", r)
    foreign = findings(r, "foreign-tstate", "error")
    expect([(f["lwp"], f["tstate"]) for f in foreign] == [(facts["copier_lwp"], facts["shared_tstate"])],
           "foreign-tstate on the copier", r)
    if not extra_foreign:
        expect(not findings(r, "tls-mismatch"), "no tls-mismatch: the copier does not hold the GIL", r)
    expect(all_tstates(r)[facts["shared_tstate"]]["lwp"] == facts["owner_lwp"], "the tstate belongs to its owner", r)


def check_dlmopen(facts, check, kind):
    status, r = check(["--json"])
    expect(status == 0, "exit status 0", r)
    expect(sorted(rt["address"] for rt in r["runtimes"]) == sorted(facts["runtimes"]), "both runtimes found", r)
    for rt in r["runtimes"]:
        i = facts["runtimes"].index(rt["address"])
        ts = [t["address"] for interp in rt["interpreters"] for t in interp["tstates"]]
        expect(ts == [facts["tstates"][i]], "each runtime lists its own tstate", r)
    multi = findings(r, "multiple-runtimes", "info")
    expect(len(multi) == 1 and "same pthread key" in multi[0]["message"], "multiple-runtimes names the key collision", r)
    expect(not [f for f in r["findings"] if f["severity"] != "info"], "a key collision is not corruption", r)


def torch_id():
    """The pybind11 internals ID Debian's libtorch_python.so was built with (torch 2.6 of Debian 13:
    its pybind11 2.13 and GCC 14's ABI; Debian 12's torch: 2.10 and GCC 12's), read from its bytes."""
    import glob
    import re
    libs = glob.glob("/usr/lib/python3/dist-packages/torch/lib/libtorch_python.so*")
    expect(libs, "Debian's python3-torch is not installed (no libtorch_python.so)")
    with open(libs[0], "rb") as f:
        ids = set(re.findall(rb"__pybind11_internals_v\d+_[A-Za-z0-9_]+?__", f.read()))
    expect(len(ids) == 1, "one pybind11 internals ID in %s: %s" % (libs[0], ids))
    return ids.pop().decode()


def check_torch(facts, check, kind):
    TORCH_ID = torch_id()
    status, r = check(["--json"])
    expect(status == 1, "exit status 1", r)
    ids = {rec["id"]: rec for rec in r["internals"]}
    expect(set(ids) == {facts["host_id"], TORCH_ID}, "the host's and torch's records", r)
    host, torch = ids[facts["host_id"]], ids[TORCH_ID]
    expect(host["tls_key"] == facts["host_key"], "the host's key", r)
    expect(any(m.endswith("/scenario_torch_host") for m in host["modules"]), "host ID attributed to the host", r)
    expect(any("/libtorch_python.so" in m for m in torch["modules"]), "torch's ID attributed to libtorch_python.so", r)
    expect({"lwp": facts["worker_lwp"], "tstate": facts["deleted_tstate"]} in
           [{"lwp": v["lwp"], "tstate": v["tstate"]} for v in torch["tls_values"]],
           "torch's key holds the deleted tstate on the worker", r)
    hits = [f for f in findings(r, "stale-tstate", "error")
            if f["lwp"] == facts["worker_lwp"] and f["tstate"] == facts["deleted_tstate"] and TORCH_ID in f["message"]]
    expect(hits, "stale-tstate names the worker, the freed pointer and torch's record", r)
    # --types: every Python name torch registered resolves in a real torch
    status, r = check_internals(["--json", "--types"])
    types = {rec["id"]: rec["types"] for rec in r["internals"]}[TORCH_ID]
    expect(len(types) > 100 and all(t["cpp"] for t in types), "torch registers its classes with C++ names", r)
    names = [t["python"] for t in types if t["python"].startswith("torch.")]
    probe = ("import functools, json, sys, torch\n"
             "def find(n):\n"
             "    try: return functools.reduce(getattr, n.split('.')[1:], torch) is not None\n"
             "    except AttributeError: return False\n"
             "print(json.dumps([n for n in json.load(sys.stdin) if not find(n)]))\n")
    import subprocess
    out = subprocess.run(["/usr/bin/python3", "-c", probe], input=json.dumps(names).encode(),
                         stdout=subprocess.PIPE, timeout=120, check=True)
    missing = json.loads(out.stdout)
    expect(len(missing) <= len(names) // 10, "torch's Python type names resolve in torch: missing %s" % missing[:20])


def check_two_abis(facts, check, kind):
    status, r = check_internals(["--json", "--types"])
    expect(status == 0, "exit status 0", r)
    got = {rec["id"]: rec for rec in r["internals"]}
    expect(set(got) == set(facts["records"]), "one record per ABI", r)
    for rid, want in facts["records"].items():
        expect(want["module"] in got[rid]["modules"], "%s attributed to %s" % (rid, want["module"]), r)
        types = {t["python"]: t["cpp"] for t in got[rid]["types"]}
        expect(types == want["types"], "%s lists exactly its module's classes" % rid, r)


def check_subinterp(facts, check, kind):
    status, r = check(["--json", "--frames", "3"])
    expect(status == scenario.quiet_status(kind) and not r["findings"], "no findings, exit status %d" % status, r)
    expect(len(r["runtimes"]) == 1, "one runtime", r)
    interps = {i["address"]: i for i in r["runtimes"][0]["interpreters"]}
    want = {facts["main_interp"]: 0}
    want.update({sub["interp"]: sub["id"] for sub in facts["subs"]})
    expect({a: i["id"] for a, i in interps.items()} == want, "three interpreters with their ids", r)
    expect([a for a, i in interps.items() if i["main"]] == [facts["main_interp"]], "only the main one is main", r)
    # The main thread runs its state (kept across PyEval_SaveThread in its frame); each sub thread
    # made one of the main interpreter and runs its sub-interpreter's instead: that one is parked.
    main_ts = {t["address"]: (t["lwp"], t.get("made_by_lwp", t["lwp"])) for t in interps[facts["main_interp"]]["tstates"]}
    expect(main_ts == dict([(facts["main_tstate"], (facts["main_lwp"], facts["main_lwp"]))] +
                           [(s["main_tstate"], (None, s["lwp"])) for s in facts["subs"]]),
           "the main interpreter's thread states: the main thread's runs there, the sub threads' are parked", r)
    for sub in facts["subs"]:
        ts = interps[sub["interp"]]["tstates"]
        expect([(t["address"], t["lwp"], t["thread_id"]) for t in ts] == [(sub["tstate"], sub["lwp"], sub["pthread"])],
               "sub-interpreter %d's thread state" % sub["id"], r)
        expect([(f["function"], f["file"], f["line"]) for f in ts[0]["frames"]] == [("wait_in_sub", "<string>", 3), ("<module>", "<string>", 4)],
               "sub-interpreter %d's frames" % sub["id"], r)


def check_embed(facts, check, kind):
    status, r = check(["--json"])
    expect(status == scenario.quiet_status(kind) and not r["findings"], "no findings, exit status %d" % status, r)
    expect([rt["version"] for rt in r["runtimes"]] == [facts["python_version"]], "one runtime, its version", r)
    interp = r["runtimes"][0]["interpreters"][0]
    ts = {t["address"]: t for t in interp["tstates"]}
    holder = [t for t in facts["threads"] if t["lwp"] == facts["gil_holder_lwp"]][0]
    expect(interp["gil_holder"] == holder["tstate"], "the GIL holder", r)
    expect(ts[facts["main_tstate"]]["lwp"] == facts["main_lwp"], "the main thread's tstate", r)
    for t in facts["threads"]:
        got = ts.get(t["tstate"])
        expect(got is not None and got["lwp"] == t["lwp"] and got["native_thread_id"] == t["lwp"]
               and got["thread_id"] == t["pthread"], "tstate %s on LWP %d" % (t["tstate"], t["lwp"]), r)
        expect(got["holds_gil"] == (t["lwp"] == facts["gil_holder_lwp"]), "holds_gil of LWP %d" % t["lwp"], r)
        frames = [(f["function"], os.path.basename(f["file"]), f["line"]) for f in got["frames"]]
        want = (t["function"], t["file"], t["line"])
        if t["lwp"] == facts["gil_holder_lwp"]:
            expect(frames[:1] == [want], "the holder's top frame is where it blocks", r)
        else:
            expect(want in frames, "LWP %d waits in %s" % (t["lwp"], want), r)
    rows = {row["lwp"]: row for row in r["threads"]}
    for t in facts["threads"]:
        expect(rows[t["lwp"]]["autotss_tstate"] == t["tstate"], "autoTSS slot of LWP %d" % t["lwp"], r)
        expect(rows[t["lwp"]]["current_tstate"] == (t["tstate"] if t["lwp"] == facts["gil_holder_lwp"] else None),
               "current tstate of LWP %d" % t["lwp"], r)


def check_dlopen_tls(facts, check, kind):
    status, r = check(["--json"])
    rows = {row["lwp"]: row for row in r["threads"]}
    expect(r["runtimes"][0]["interpreters"][0]["gil_holder"] == facts["holder_tstate"], "the GIL holder", r)
    expect(rows[facts["holder_lwp"]]["current_tstate"] == facts["holder_tstate"] and "current_status" not in rows[facts["holder_lwp"]],
           "the holder's _Py_tss_tstate, read through its DTV", r)
    expect(rows[facts["plain_lwp"]]["current_tstate"] is None and
           rows[facts["plain_lwp"]].get("current_status") == "not allocated for this thread",
           "a thread that never ran Python has no TLS block: not allocated, not NULL", r)
    expect(rows[facts["main_lwp"]]["current_tstate"] is None and "current_status" not in rows[facts["main_lwp"]],
           "the main thread's _Py_tss_tstate is NULL after it released the GIL", r)
    expect(rows[facts["holder_lwp"]]["current_source"] == "_Py_tss_tstate", "the source is named", r)


def check_greenlets(facts, check, kind):
    status, r = check(["--json", "--frames", "10"])
    expect(status == 0 and not r["findings"], "no findings", r)
    ts = r["runtimes"][0]["interpreters"][0]["tstates"]
    expect([t["address"] for t in ts] == [facts["tstate"]] and ts[0]["lwp"] == facts["lwp"] and ts[0]["holds_gil"],
           "one thread state, holding the GIL", r)
    frames = [(f["function"], f["line"]) for f in ts[0]["frames"]]
    expect(frames[:1] == [("running", facts["running_line"])], "the running greenlet's frame on top", r)
    expect(("parked", facts["parked_line"]) not in frames, "a parked greenlet is not on the thread's stack", r)


def check_first_repro(facts, check, kind):
    """The seed's first reproduction: T0, created and deleted by PyGILState inside get_internals(),
    cached by the host's key, is the worker's current thread state and the GIL holder. Freed
    memory holding the GIL is an error, not a thread ending."""
    status, r = check(["--json"])
    t0, lwp = facts["t0"], facts["worker_lwp"]
    expect(status == 1, "exit status 1", r)
    expect(facts["current"] == t0 and t0 not in all_tstates(r), "T0 is current on the worker and in no list", r)
    expect(not any("deleting its own thread state" in w for w in r.get("warnings", [])),
           "freed memory holding the GIL is not taken for a thread ending", r)
    stale = findings(r, "stale-tstate", "error")
    key = "pybind11 key %d (%s)" % (facts["host_key"], facts["host_id"])
    # At the crash 3.13+ has cleared its current thread state already (_PyThreadState_DeleteCurrent
    # calls current_fast_clear before tstate_delete_common; 3.12 and older after it).
    version = tuple(int(x) for x in r["runtimes"][0]["version"].split(".")[:2])
    current = kind != "crash" or version < (3, 13)
    expect(len(stale) == 1 and stale[0]["lwp"] == lwp and stale[0]["tstate"] == t0 and key in stale[0]["sources"]
           and any(s.startswith("CPython's current thread state") for s in stale[0]["sources"]) == current,
           "one stale-tstate on the worker: T0, named by the host's key%s CPython's current thread state"
           % (" and" if current else ", not"), r)
    expect("freed" in stale[0]["message"] and "another pybind11 internals record" not in stale[0]["message"],
           "the memory was freed; with one internals record, the cause names no other record", r)
    gil = findings(r, "invalid-gil-holder", "error")
    expect([f["tstate"] for f in gil] == [t0], "invalid-gil-holder names T0", r)
    status, text = check([])
    if kind == "crash":
        check_crash(r, text, lwp, 11, "tstate_delete_common", t0, {"stale-tstate", "invalid-gil-holder"}, "tstate")
    else:
        expect(r["target"]["crash"] is None, "no crash section while the process runs", r)


def check_abort_repro(facts, check, kind):
    """The first reproduction with pybind11's checks on: the worker's cached, freed T0 is no longer
    current when its gil_scoped_acquire ends, pybind11_fail throws out of the destructor and the
    process aborts. The abort is tied to the stale-tstate finding on that thread, in one line."""
    status, r = check(["--json"])
    t0, lwp = facts["t0"], facts["worker_lwp"]
    expect(facts["current"] == facts["task"] and t0 not in all_tstates(r), "the task's state is current, T0 in no list", r)
    stale = findings(r, "stale-tstate", "error")
    expect(len(stale) == 1 and stale[0]["lwp"] == lwp and stale[0]["tstate"] == t0, "one stale-tstate on the worker: T0", r)
    crash = r["target"]["crash"]
    expect(crash and crash["lwp"] == lwp and crash["signal"] == 6 and crash.get("sender_pid") == facts["pid"],
           "SIGABRT on the worker, sent by the process itself", r)
    names = [f["function"] for f in crash["frames"]]
    expect("pybind11::pybind11_fail" in names and "__cxa_throw" in names, "pybind11_fail -> __cxa_throw on the stack", r)
    abort = crash.get("abort") or {}
    expect(abort.get("kind") == "uncaught-exception" and abort.get("type") == "std::runtime_error"
           and abort.get("message") == "scoped_acquire::dec_ref(): thread state must be current!",
           "the uncaught exception: std::runtime_error with pybind11's message", r)
    explained = [r["findings"][i] for i in crash["explained_by"]]
    expect(any(f["code"] == "stale-tstate" and f["tstate"] == t0 for f in explained), "the abort is tied to the stale-tstate on T0", r)
    status, text = check([])
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("CRASH  ")]
    expect(starts, "a CRASH section:\n" + text[:2000])
    section = lines[starts[0]:starts[0] + 12]
    tied = [line for line in section if "the abort is likely the" in line and "stale-tstate" in line]
    expect(len(tied) >= 1, "one line of the CRASH section ties the abort to stale-tstate:\n" + "\n".join(section))
    print("CRASH section:\n" + "\n".join(section))


def check_fatal(facts, check, kind):
    """CPython's own fatal error (PyGILState_Release of a state that is not current): the crash
    section names the thread, SIGABRT sent by the process itself, and the message from the
    arguments of the function that printed it."""
    status, r = check(["--json"])
    crash = r["target"]["crash"]
    expect(crash and crash["lwp"] == facts["worker_lwp"] and crash["signal"] == 6 and crash.get("sender_pid") == facts["pid"],
           "SIGABRT on the worker, sent by the process itself", r)
    expect(crash.get("fatal_error", "").startswith("Fatal Python error: PyGILState_Release: thread state")
           and "must be current when releasing" in crash["fatal_error"], "CPython's fatal error, read from the core", r)
    expect([f["function"] for f in crash["frames"]].index("PyGILState_Release") > 0, "PyGILState_Release on the stack", r)
    status, text = check([])
    expect("Fatal Python error: PyGILState_Release" in text.split("CPython ")[0], "the text shows it in the crash section\n" + text)


check_internals = None  # set by the driver: runs `pytstates internals` on the same target


def check_case(case, facts, check, kind):
    if case == "torch":
        return check_torch(facts, check, kind)
    if case == "two-abis":
        return check_two_abis(facts, check, kind)
    if case == "subinterp":
        return check_subinterp(facts, check, kind)
    if case == "embed":
        return check_embed(facts, check, kind)
    if case.startswith("dlopen-tls-"):
        return check_dlopen_tls(facts, check, kind)
    if case == "greenlets":
        return check_greenlets(facts, check, kind)
    if case == "first-repro":
        return check_first_repro(facts, check, kind)
    if case == "fatal":
        return check_fatal(facts, check, kind)
    if case == "abort-repro":
        return check_abort_repro(facts, check, kind)
    if case == "seed-held":
        return check_seed_held(facts, check, kind)
    if case.startswith("seed-"):
        return check_seed(case.split("-")[1], facts, check, kind)
    return {"orphan": check_orphan, "shared": check_shared, "shared-gil": check_shared_gil,
            "dlmopen": check_dlmopen}[case](facts, check, kind)
