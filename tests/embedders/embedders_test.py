#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Real programs that embed CPython, nobody here wrote, started by the test: uWSGI with three
mounted apps (one sub-interpreter each, or --single-interpreter), Apache mod_wsgi (daemon and
embedded mode, each thread serving several application groups), PostgreSQL's plpython3u, gdb's
own Python and vim's :py3. Requests park in known functions and record which OS thread and
interpreter run them; pytstates (live, gcore, kernel core) must say the same, with no error."""
import argparse
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import agree  # noqa: E402
import debuggers  # noqa: E402
import scenario  # noqa: E402
import servers  # noqa: E402
from agree import expect  # noqa: E402


class Requests:
    """Requests sent each from its own thread; wait() returns their (status, body)."""

    def __init__(self, port):
        self.port, self.threads, self.results = port, [], {}

    def send(self, path):
        def run():
            try:
                self.results[path, t.name] = servers.get(self.port, path, timeout=600)
            except OSError as e:
                self.results[path, t.name] = (None, str(e))
        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.threads.append(t)

    def wait(self, timeout=60):
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        return list(self.results.values())


def pytstates(args, target, extra=()):
    status, out, err = scenario.run_pytstates(args.pytstates, ["check"] + target + list(extra))
    expect(status in (0, 1), "pytstates check %s exited %d: %s" % (" ".join(target), status, err))
    return status, out


def examine(args, target, facts, where, exe=None, core=None, gil=True, show=False, errors=None, also=None, nested=None):
    """pytstates check on a live process or a core, in JSON, --native and text. errors: the error
    findings memory shows (agree.no_error), none by default; also(report, where): the case's own
    checks, on every JSON report; nested: {LWP: interpreter ids, innermost first} where the
    facts' calls are the innermost of callbacks nested on their thread (agree.check_native)."""
    def check(report, name):
        agree.check_report(report, facts, name, gil=gil, errors=errors, nested=bool(nested))
        if also:
            also(report, name)
    status, report = pytstates(args, target, ["--json"])
    check(report, where)
    # a kernel core (these take it with SIGABRT) is a CRASH: exit status 1 with no error finding either
    crashed = report["target"].get("crash") is not None
    expect(status == (1 if errors or crashed else 0), "%s: exit status %d with %s%s" % (
        where, status, sorted(errors or ()) or "no error finding", ", a crash" if crashed else ""), report)
    # without DWARF: layouts from _Py_DebugOffsets or the built-in tables, no eval-loop arguments
    _, bare = pytstates(args, target, ["--json", "--no-dwarf"])
    check(bare, where + " --no-dwarf")
    if core:
        expect(agree.attribution(bare) == agree.attribution(report), "%s: --no-dwarf attributes alike" % where)
    _, native = pytstates(args, target, ["--json", "--native"])
    if core:  # the same bytes twice: both snapshots alike
        check(native, where + " --native")
    agree.check_native(native, native, where, nested)
    _, text = pytstates(args, target)
    for fact in facts:
        expect(fact["function"] in text, "%s text: %s is named" % (where, fact["function"]))
    if show:
        print("---- pytstates check %s (%s)\n%s----" % (" ".join(target), where, text))
    if core:
        exe = exe or report["target"]["executable"]
        agree.check_gdb_walk(exe, core, report, where)
        # the same rule inside gdb and lldb, and the same facts as the CLI's
        for name, got in (("gdb", debuggers.gdb_check(args.gdb_script, exe, core)),
                          ("lldb", debuggers.lldb_check(args.lldb_plugin, exe, core))):
            check(got, "%s in %s" % (where, name))
            expect(agree.attribution(got) == agree.attribution(report),
                   "%s: %s and the CLI attribute the thread states alike" % (where, name))
        print("%s: py-tstates-check --json in gdb and in lldb: the same thread on every thread state, the same findings" % where)
    print("%s: %d recorded calls agree (%d thread states, %d threads, findings: %s)" % (
        where, len(facts), sum(len(i["tstates"]) for _, i in agree.interpreters(report)), len(report["threads"]),
        [f["code"] for f in report["findings"]] or "none"))
    return report


def park(port, state, plan, busy_plan=()):
    """Sends ?do=park to each mount in plan, then ?do=spin to each in busy_plan; returns the
    pending requests and the facts once every call is parked or spinning."""
    servers.clear_facts(state)
    reqs = Requests(port)
    for mount in plan:
        reqs.send("/%s/?do=park" % mount)
        time.sleep(0.1)
    for mount in busy_plan:
        reqs.send("/%s/?do=spin" % mount)
    return reqs, servers.wait_parked(state, len(plan), len(busy_plan))


def served(reqs, state, n):
    servers.release(state)
    results = reqs.wait()
    ok = [r for r in results if r[0] == 200]
    expect(len(ok) == n, "all %d parked and busy requests answered 200 after pytstates: %s" % (n, results))
    print("%d/%d parked and busy requests served after pytstates" % (len(ok), n))


# ---------------------------------------------------------------------------------------- uWSGI
PLAN = ["alpha", "beta", "gamma", "beta"]  # four parked requests, two of them in one interpreter
BUSY = ["gamma"]                           # one busy


def uwsgi(args, single):
    with servers.workdir("uwsgi") as work:
        port = servers.free_port()
        state = os.path.join(work, "state")
        app = os.path.join(work, "wsgi_app.py")
        argv = ["uwsgi", "--plugin", "python3", "--http-socket", "127.0.0.1:%d" % port, "--master",
                "--processes", "1", "--threads", "6", "--manage-script-name", "--die-on-term",
                "--pidfile", os.path.join(work, "uwsgi.pid")]
        for mount in ("alpha", "beta", "gamma"):
            argv += ["--mount", "/%s=%s" % (mount, app)]
        if single:
            argv.append("--single-interpreter")
        log = os.path.join(work, "uwsgi.log")
        with servers.process_group(argv, work, log) as proc:
            for mount in ("alpha", "beta", "gamma"):
                hello = servers.wait_answering(port, "/%s/?do=hello" % mount, proc, log)
                print("uWSGI /%s: interpreter %d in worker %d" % (mount, hello["interp"], hello["pid"]))
                # uWSGI keeps the first mount in the main interpreter and gives the others one each
                expect(hello["interp"] == (0 if single else ("alpha", "beta", "gamma").index(mount)),
                       "/%s runs in interpreter %d" % (mount, hello["interp"]))
            name = "uwsgi-single" if single else "uwsgi-mount"
            reqs, facts = park(port, state, PLAN, BUSY)
            worker = facts[0]["pid"]
            expect(worker != proc.pid, "the requests run in the worker, not the master")
            examine(args, ["--pid", str(worker)], facts, name + " live", show=True)
            core = servers.gcore(worker, work)
            examine(args, ["--core", core], facts, name + " gcore", core=core, show=True)
            os.unlink(core)
            served(reqs, state, len(PLAN) + len(BUSY))
            reqs, facts = park(port, state, PLAN, BUSY)
            core = servers.kernel_core(facts[0]["pid"], work)
            examine(args, ["--core", core], facts, name + " kernel core", core=core)
            servers.release(state)
            reqs.wait()
    print("uWSGI stopped")


# ------------------------------------------------------------------------------ Apache mod_wsgi
def hold_on_every_thread(port, mount, seen, threads=6):
    """`threads` concurrent requests to mount, each answered only once all of them are in the
    application at once (?do=hold&n=: a barrier in the mount's interpreter), so on `threads`
    distinct request threads: Apache's `threads` (httpd.conf.in) have then each served mount,
    whichever thread Apache gave each request. Adds to seen {native id: interpreters it served}."""
    reqs = Requests(port)
    for _ in range(threads):
        reqs.send("/%s/?do=hold&n=%d&s=60" % (mount, threads))
    results = reqs.wait(90)
    expect(len(results) == threads and all(status == 200 for status, _ in results),
           "%d requests to /%s held at once (503: fewer met in one interpreter): %s" % (threads, mount, results))
    lwps = {body["native_id"] for _, body in results}
    expect(len(lwps) == threads, "the %d requests to /%s held at once ran on %d threads" % (threads, mount, len(lwps)))
    for _, body in results:
        seen.setdefault(body["native_id"], set()).add(body["interp"])


def start_apache(work, port, mode):
    """Apache on 127.0.0.1:port from tests/scenarios/embedders/httpd.conf.in, in daemon or
    embedded mode; a process_group context."""
    with open(os.path.join(servers.SCENARIOS, "httpd.conf.in")) as f:
        conf = f.read().replace("@ROOT@", work).replace("@PORT@", str(port))
    with open(os.path.join(work, "httpd.conf"), "w") as f:
        f.write(conf)
    argv = ["/usr/sbin/apache2", "-d", work, "-f", os.path.join(work, "httpd.conf"), "-DFOREGROUND"]
    if mode == "daemon":
        argv.append("-Ddaemon")
    return servers.process_group(argv, work, os.path.join(work, "stdout.log"))


def mod_wsgi(args, mode):
    with servers.workdir("apache-" + mode, world_writable=("cores", "run")) as work:
        port = servers.free_port()
        state = os.path.join(work, "state")
        log = os.path.join(work, "error.log")
        name = "mod_wsgi-" + mode
        with start_apache(work, port, mode) as proc:
            # Every request thread's first request is to /alpha (%{GLOBAL}): on a thread whose first
            # was to /beta or /gamma, mod_wsgi runs /alpha in that sub-interpreter for good
            # (mod_wsgi_first_state), and which thread serves the first requests is Apache's choice
            # (Debian 13's Apache spreads three successive ones over three threads).
            servers.wait_answering(port, "/alpha/?do=hello", proc, log)
            seen = {}
            hold_on_every_thread(port, "alpha", seen)
            for mount in ("alpha", "beta", "gamma"):
                hello = servers.wait_answering(port, "/%s/?do=hello" % mount, proc, log)
                print("mod_wsgi %s /%s: interpreter %d in process %d" % (mode, mount, hello["interp"], hello["pid"]))
                expect(hello["pid"] != proc.pid, "requests run in a child, not in Apache's parent")
            for mount in ("beta", "gamma"):
                hold_on_every_thread(port, mount, seen)
            print("%s warm-up: interpreters each request thread served: %s" % (
                name, {lwp: sorted(v) for lwp, v in sorted(seen.items())}))
            expect(len(seen) == 6 and all(v == {0, 1, 2} for v in seen.values()),
                   "%s warm-up: each of the 6 request threads served the three interpreters (%s)" % (name, seen))
            reqs, facts = park(port, state, PLAN, BUSY)
            busy = next(f for f in facts if f["function"].startswith("spin"))
            # the case that raised a false tls-mismatch: a thread holding the GIL in a
            # sub-interpreter, PyGILState's slot still naming its main-interpreter thread state
            expect(0 in seen.get(busy["native_id"], ()), "%s: the busy thread %d served the main interpreter before (%s)"
                   % (name, busy["native_id"], seen))
            examine_all(args, port, state, facts, reqs, name, os.path.join(work, "cores"))
    print("Apache stopped")


def mod_wsgi_first_state(args, threads=6):
    """Every daemon thread serves /beta first. mod_wsgi enters a sub-interpreter after a
    PyGILState_Ensure/Release pair on the main interpreter (whose thread state Release deletes,
    emptying PyGILState's slot), with PyThreadState_New, which CPython then files in that empty
    slot; it enters %{GLOBAL} through PyGILState_Ensure, which takes the slot. So /alpha runs on
    beta's thread state, in interpreter 1, on every thread but the one that created 'beta' (seen:
    that one's slot keeps a main-interpreter state)."""
    with servers.workdir("apache-first", world_writable=("cores", "run")) as work:
        port = servers.free_port()
        state = os.path.join(work, "state")
        name = "mod_wsgi-first-state"
        with start_apache(work, port, "daemon") as proc:
            creator = servers.wait_answering(port, "/beta/?do=hello", proc, os.path.join(work, "error.log"))["native_id"]
            reqs = Requests(port)
            for _ in range(threads):  # all held at once: on every daemon thread, whichever Apache picks
                reqs.send("/beta/?do=hold&n=%d&s=60" % threads)
            first = {body["native_id"] for status, body in reqs.wait(90) if status == 200}
            print("%s: /beta served first on threads %s ('beta' created on %d)" % (name, sorted(first), creator))
            expect(len(first) == threads, "%s: every daemon thread served /beta first (%s)" % (name, sorted(first)))
            plan, busy_plan = ["alpha", "gamma", "alpha"], ["alpha"]
            reqs, facts = park(port, state, plan, busy_plan)
            alpha = [f for f in facts if f["mount"] == "alpha"]
            for fact in alpha:
                if fact["native_id"] != creator:
                    expect(fact["interp"] == 1, "%s: /alpha (%%{GLOBAL}) on LWP %d ran in interpreter %d, not on beta's thread state"
                           % (name, fact["native_id"], fact["interp"]))
            print("%s: /alpha requests in interpreters %s (their own record)" % (name, [f["interp"] for f in alpha]))
            examine_all(args, port, state, facts, reqs, name, os.path.join(work, "cores"), plan, busy_plan)
    print("Apache stopped")


def examine_all(args, port, state, facts, reqs, name, cores, plan=PLAN, busy_plan=BUSY):
    """Live and gcore on the parked requests; then released (all served), parked again, and the
    kernel's core."""
    worker = facts[0]["pid"]
    examine(args, ["--pid", str(worker)], facts, name + " live", show=True)
    core = servers.gcore(worker, os.path.dirname(state))
    examine(args, ["--core", core], facts, name + " gcore", core=core)
    os.unlink(core)
    served(reqs, state, len(plan) + len(busy_plan))
    reqs, facts = park(port, state, plan, busy_plan)
    core = servers.kernel_core(facts[0]["pid"], cores)
    examine(args, ["--core", core], facts, name + " kernel core", core=core)
    servers.release(state)
    reqs.wait()


def load(args, attaches=30, clients=4):
    """`attaches` live `check --pid` against the mod_wsgi daemon while `clients` threads send
    requests to its three application groups without pause: every request served, no error
    finding, no thread running two thread states; the stops printed."""
    with servers.workdir("apache-load", world_writable=("cores", "run")) as work:
        port = servers.free_port()
        log = os.path.join(work, "error.log")
        with start_apache(work, port, "daemon") as proc:
            worker = None
            for mount in ("alpha", "beta", "gamma"):
                worker = servers.wait_answering(port, "/%s/?do=hello" % mount, proc, log)["pid"]
            done = threading.Event()
            counts = {"ok": 0, "failed": []}
            interps = {}  # mount: {interpreter id: requests}, as the requests saw it
            lock = threading.Lock()

            def client(i):
                n = i
                while not done.is_set():
                    mount = ("alpha", "beta", "gamma")[n % 3]
                    n += 1
                    try:
                        status, body = servers.get(port, "/%s/?do=hello" % mount)
                        good = status == 200 and body["mount"] == mount
                    except (OSError, ValueError, TypeError, KeyError) as e:
                        good, status, body = False, str(e), None
                    with lock:
                        if good:
                            counts["ok"] += 1
                            seen = interps.setdefault(mount, {})
                            seen[body["interp"]] = seen.get(body["interp"], 0) + 1
                        else:
                            counts["failed"].append((mount, status, body))
            workers = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
            for t in workers:
                t.start()
            stops = []
            try:
                for i in range(attaches):
                    status, report = pytstates(args, ["--pid", str(worker)], ["--json"])
                    where = "attach %d under load" % (i + 1)
                    agree.running(report, where)
                    agree.no_error(report, where)
                    expect(status == 0, where + ": exit status %d, findings %s" %
                           (status, [(f.get("code"), f.get("message")) for f in report.get("findings", [])]))
                    stops.append(report["target"]["stopped_ms"])
            finally:
                done.set()
                for t in workers:
                    t.join(60)
            expect(not counts["failed"], "every request served: %d failed %s" % (len(counts["failed"]), counts["failed"][:5]))
            expect(counts["ok"] > attaches, "requests ran during the attaches (%d)" % counts["ok"])
            stops.sort()
            print("%d live attaches to mod_wsgi daemon %d under load: %d/%d requests served, 0 error findings, "
                  "stopped_ms min %.1f median %.1f max %.1f" % (attaches, worker, counts["ok"], counts["ok"] + len(counts["failed"]),
                                                                 stops[0], stops[len(stops) // 2], stops[-1]))
            # mod_wsgi enters %{GLOBAL} through PyGILState_Ensure, which takes the thread state in
            # PyGILState's slot: a sub-interpreter's on a thread whose first request was in one
            # (see mod_wsgi_first_state), so some /alpha requests run in interpreter 1 or 2
            print("interpreters the requests ran in, by mount: %s" % {m: dict(sorted(v.items())) for m, v in sorted(interps.items())})
    print("Apache stopped")


# ---------------------------------------------------------------------------- Apache mod_python
SKIPPED = 77  # tests/embedders/CMakeLists.txt: SKIP_RETURN_CODE
SERVER_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}  # Debian's python3, not a PATH's


def gil_waiters(pid, busy_lwps, n, timeout=90):
    """The LWPs of the `n` threads of pid, none of busy_lwps, that wait in futex(2) on a word of
    libpython's own data (the GIL's condition variable, in _PyRuntime: take_gil), once there are
    n; Apache's idle workers wait on a condition variable of their own, elsewhere."""
    with open("/proc/%d/maps" % pid) as f:
        libpython = [tuple(int(x, 16) for x in line.split()[0].split("-")) for line in f
                     if "/libpython3" in line]
    deadline = time.monotonic() + timeout
    found = []
    while time.monotonic() < deadline:
        found = []
        for task in os.listdir("/proc/%d/task" % pid):
            lwp = int(task)
            try:
                with open("/proc/%d/task/%d/syscall" % (pid, lwp)) as f:
                    words = f.read().split()
            except OSError:
                continue
            if lwp not in busy_lwps and len(words) > 1 and words[0] == "202" and \
                    any(low <= int(words[1], 16) < high for low, high in libpython):  # futex(uaddr, ...)
                found.append(lwp)
        if len(found) == n:
            return sorted(found)
        time.sleep(0.1)
    stacks = subprocess.run(["gdb", "-batch", "-nx", "-p", str(pid), "-ex", "set debuginfod enabled off", "-ex", "thread apply all bt 8"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120).stdout.decode(errors="replace")
    raise servers.ServerError("%d threads of %d wait on a futex in libpython, not %d: %s; the threads:\n%s"
                              % (len(found), pid, n, found, "\n".join(l for l in stacks.splitlines() if l.startswith(("#", "Thread")))))


def memory_errors(mem, report, busy_lwp):
    """The error findings that the core's memory (gdb_gil: PyGILState's slot of every thread) calls
    for, given which thread runs which state with Python frames (the report's, which examine()
    holds against the facts the requests recorded): tls-mismatch where the GIL holder's slot names
    another state of the interpreter it runs now; foreign-tstate where a thread's slot names a
    state another thread runs; shared-tstate where two threads name one listed state: two slots
    (seen once in mod_python's kernel core: two request threads' slots naming one gamma state), or
    a slot naming the state the busy thread's current pointer names."""
    interp_of = {ts["address"]: i["id"] for _, i in agree.interpreters(report) for ts in i["tstates"]}
    runner = {ts["address"]: ts["lwp"] if ts["frames"] else None for _, i in agree.interpreters(report) for ts in i["tstates"]}
    running = {lwp: address for address, lwp in runner.items() if lwp is not None}
    errors = set()
    # The busy thread's current pointer names the state it runs: a slot of another thread naming
    # that state makes two threads that would run Python on it (shared-tstate), as two slots do.
    current = agree.gdb_current(mem, busy_lwp)
    named = {current: [busy_lwp]} if current in interp_of else {}
    for lwp, slot in ((int(k), v) for k, v in mem["slots"].items()):
        if slot in (None, "0x0") or slot not in interp_of:
            continue
        if lwp not in named.setdefault(slot, []):
            named[slot].append(lwp)
        if len(named[slot]) == 2:  # two threads name one listed state
            errors.add(("shared-tstate", None))
        mine = running.get(lwp)
        if lwp == busy_lwp and mine and slot != mine and interp_of[slot] == interp_of[mine]:
            errors.add(("tls-mismatch", lwp))
        if runner[slot] is not None and runner[slot] != lwp:
            errors.add(("foreign-tstate", lwp))
    return errors


def mod_python(args):
    """Apache's event MPM with mod_python 3.5 (Debian's): /alpha, /beta and /gamma in three
    PythonInterpreters, PythonAutoReload Off. Four requests park in Python (the GIL released), one
    spins in gamma holding the GIL, and two more requests, to alpha and beta, wait for the GIL.

    mod_python takes the GIL for every request with PyEval_RestoreThread() on its main
    interpreter's state (made at start-up, parked; its child's main thread sits in read() on
    Apache's pipe of death), then swaps in the request's sub-interpreter state with
    PyThreadState_Swap(). The busy request makes no system call after that (its fact and its
    stop flag are mappings, truth.spin_holding), so take_gil() last wrote ceval.gil.last_holder
    with the main interpreter's state while the GIL belongs to the state the busy thread runs
    (gilstate.tstate_current): gdb reads both from each core, and the test requires them to
    differ, since that is the case it is about. The waiters wait in take_gil() with the main
    interpreter's state; CPython 3.9-3.12 asks only that interpreter's threads to drop the GIL,
    so the spinner in gamma never does and the waiters wait until the test stops it. (From 3.12
    PyThreadState_Swap() hands the GIL over through take_gil(), so last_holder is not required to
    differ; 3.13 asks the holder to drop it, so no request is sent to wait there.)

    pytstates must say: the busy thread's state holds the GIL (holds_gil, gil_holder, its
    thread's current state), not the parked main-interpreter state; each waiter's blocked_on is
    the GIL, held_by the busy thread's LWP.

    tls-mismatch and foreign-tstate: what PyGILState's slots in the core show (memory_errors).
    mod_python keeps each interpreter's thread states across requests and hands them to whichever
    thread serves that interpreter next (seen: states made by one thread run on another, and a
    thread that made two states of one interpreter). PyThreadState_New() files a new state in its
    maker's slot when the slot is empty, and the slot keeps it when the state goes to another
    thread. So gdb finds slots naming states that other threads run now (foreign-tstate: a
    PyGILState_Ensure() there would run Python on a state in use), at times two slots naming one
    state (shared-tstate), and on the busy thread, when
    its slot names another state of the interpreter it runs, a true tls-mismatch (both live, both
    gamma's, while it holds the GIL). Which states go where follows the pool's order, so the
    findings due are read from each core. Live: the same, read from the gcore taken just before."""
    package = subprocess.run(["bash", "-c", '. "$1/scripts/lib/suite.sh" && suite_modpython_package', "-", agree.TOP],
                             stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    if not package:  # not a pass: ctest reports the case as not run (SKIP_RETURN_CODE)
        print("SKIP embedders mod_python: this Debian suite has no mod_python package (scripts/lib/suite.sh: "
              "Debian 13 has it only in its backports)")
        sys.exit(SKIPPED)
    with servers.workdir("apache-mod_python", world_writable=("cores", "run"), files=("modpython_app.py",)) as work:
        port = servers.free_port()
        state = os.path.join(work, "state")
        log = os.path.join(work, "error.log")
        name = "mod_python"
        with open(os.path.join(servers.SCENARIOS, "modpython.conf.in")) as f:
            conf = f.read().replace("@ROOT@", work).replace("@PORT@", str(port))
        with open(os.path.join(work, "httpd.conf"), "w") as f:
            f.write(conf)
        argv = ["/usr/sbin/apache2", "-d", work, "-f", os.path.join(work, "httpd.conf"), "-DFOREGROUND"]
        with servers.process_group(argv, work, os.path.join(work, "stdout.log"), env=SERVER_ENV) as proc:
            interps = {}
            for mount in ("alpha", "beta", "gamma"):
                hello = servers.wait_answering(port, "/%s/?do=hello" % mount, proc, log)
                print("mod_python /%s: interpreter %d in process %d" % (mount, hello["interp"], hello["pid"]))
                expect(hello["pid"] != proc.pid, "requests run in a child, not in Apache's parent")
                interps[mount] = hello["interp"]
            # 3.9-3.12 ask only the waiter's interpreter's threads to drop the GIL: waiters in alpha
            # and beta wait as long as gamma spins. 3.13 asks the GIL's holder: they get their turn.
            lasting_waiters = tuple(hello["python"]) < (3, 13)
            expect(0 not in interps.values() and len(set(interps.values())) == 3,
                   "three PythonInterpreters, three sub-interpreters: %s" % interps)
            plan, busy_plan = ["alpha", "beta", "gamma", "beta"], ["gamma"]

            def round_():
                servers.clear_facts(state)
                status, _ = servers.get(port, "/gamma/?do=arm")
                expect(status == 200, "/gamma/?do=arm")
                reqs, facts = park(port, state, plan, busy_plan)
                busy = next(f for f in facts if f["function"].startswith("spin"))
                waiting = Requests(port)
                waiters = []
                if lasting_waiters:
                    for mount in ("alpha", "beta"):
                        waiting.send("/%s/?do=hello" % mount)
                    waiters = gil_waiters(busy["pid"], {f["native_id"] for f in facts}, 2)
                print("%s: busy LWP %d, GIL waiters %s" % (name, busy["native_id"], waiters or "none (CPython 3.13+)"))
                return reqs, waiting, facts, busy, waiters

            def memory(exe, core, report, busy, where):
                """gdb's reading of the core: the scenario (last_holder is not the state that runs)
                and the findings it calls for."""
                mem = agree.gdb_gil(exe, core, where)
                runs = agree.running(report, where)
                held = runs[busy["native_id"]][1]
                interp_of = {ts["address"]: i["id"] for _, i in agree.interpreters(report) for ts in i["tstates"]}
                current = agree.gdb_current(mem, busy["native_id"])
                print("%s: gdb: GIL locked %s, last_holder %s (interpreter %s), current %s (interpreter %s, "
                      "LWP %d's), PyGILState slots %s" % (where, mem["locked"], mem["last_holder"], interp_of.get(mem["last_holder"]),
                                                          current, interp_of.get(current), busy["native_id"], mem["slots"]))
                expect(mem["locked"] == 1 and current == held["address"],
                       "%s: gdb: the GIL is locked and the busy thread's current state is %s" % (where, held["address"]))
                if agree.version(report) < (3, 12):  # 3.12's PyThreadState_Swap() hands the GIL over through take_gil()
                    expect(interp_of.get(mem["last_holder"]) == 0 and mem["last_holder"] != current,
                           "%s: gdb: last_holder %s is a main-interpreter state, not the running one" % (where, mem["last_holder"]))
                return memory_errors(mem, report, busy["native_id"])

            def examine_round(live, reqs, waiting, facts, busy, waiters, kernel=False):
                def also(report, where):
                    agree.check_waiters(report, waiters, busy["native_id"], where, named="--no-dwarf" not in where)
                worker = busy["pid"]
                if kernel:
                    core = servers.kernel_core(worker, os.path.join(work, "cores"))
                    where = name + " kernel core"
                else:
                    core = servers.gcore(worker, work)
                    where = name + " gcore"
                # which thread runs which state: the report's, held against the facts by examine()
                _, first = pytstates(args, ["--core", core], ["--json"])
                errors = memory("/usr/sbin/apache2", core, first, busy, where)
                print("%s: error findings memory calls for: %s" % (where, sorted(errors) or "none"))
                if live:
                    examine(args, ["--pid", str(worker)], facts, name + " live", show=True, errors=errors, also=also)
                examine(args, ["--core", core], facts, where, exe="/usr/sbin/apache2", core=core, show=True, errors=errors, also=also)
                os.unlink(core)

            reqs, waiting, facts, busy, waiters = round_()
            examine_round(True, reqs, waiting, facts, busy, waiters)
            served(reqs, state, len(plan) + len(busy_plan))
            answered = [r for r in waiting.wait() if r[0] == 200]
            expect(len(answered) == len(waiters), "the GIL waiters answered once the spinner stopped")
            reqs, waiting, facts, busy, waiters = round_()
            examine_round(False, reqs, waiting, facts, busy, waiters, kernel=True)
            servers.release(state)
            reqs.wait()
            waiting.wait()
    print("Apache stopped")


# --------------------------------------------------------------------------------------- collectd
def collectd(args):
    """collectd's python plugin (one interpreter, the main one) with ReadThreads 5: five read
    callbacks (tests/scenarios/embedders/collectd_park.py), four parked in Python, one busy, each
    on its own read thread. pytstates must put each callback's thread state on the read thread
    that runs it, and the GIL on the busy one."""
    with servers.workdir("collectd", files=("collectd_park.py",)) as work:
        state = os.path.join(work, "state")
        with open(os.path.join(servers.SCENARIOS, "collectd.conf.in")) as f:
            conf = f.read().replace("@ROOT@", work)
        with open(os.path.join(work, "collectd.conf"), "w") as f:
            f.write(conf)
        argv = ["/usr/sbin/collectd", "-f", "-C", os.path.join(work, "collectd.conf")]
        with servers.process_group(argv, work, os.path.join(work, "collectd.out"), env=SERVER_ENV) as proc:
            try:
                facts = servers.wait_parked(state, 4, 1)
            except servers.ServerError:
                print(servers.tail(os.path.join(work, "collectd.log")))
                raise
            lwps = {f["native_id"] for f in facts}
            expect(all(f["pid"] == proc.pid and f["interp"] == 0 for f in facts) and len(lwps) == 5 and proc.pid not in lwps,
                   "five callbacks on five read threads of collectd %d, in the main interpreter: %s" % (proc.pid, facts))
            with open("/proc/%d/task/%d/comm" % (proc.pid, facts[0]["native_id"])) as f:
                print("collectd %d: read callbacks on LWPs %s (%s...)" % (proc.pid, sorted(lwps), f.read().strip()))
            examine(args, ["--pid", str(proc.pid)], facts, "collectd live", show=True)
            core = servers.gcore(proc.pid, work)
            examine(args, ["--core", core], facts, "collectd gcore", exe="/usr/sbin/collectd", core=core)
            os.unlink(core)
            servers.release(state)
            # the callbacks return and run again on whichever read thread is free: park them anew
            time.sleep(1.5)
            servers.clear_facts(state)
            facts = servers.wait_parked(state, 4, 1)
            core = servers.kernel_core(proc.pid, work)
            examine(args, ["--core", core], facts, "collectd kernel core", exe="/usr/sbin/collectd", core=core)
    print("collectd stopped")


# ------------------------------------------------------------------------------- WeeChat scripts
def wait_functions(state, functions, timeout=60):
    """The facts once every function in `functions` recorded itself, by function."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = {f["function"]: f for f in servers.read_facts(state)}
        if set(functions) <= set(got):
            return got
        time.sleep(0.1)
    raise servers.ServerError("expected calls %s, have %s" % (sorted(functions), sorted(got)))


def weechat(args):
    """weechat-headless with three Python scripts (tests/scenarios/embedders/weechat_nest.py as
    a.py, b.py, c.py), each in its own sub-interpreter. On WeeChat's main thread, script a's
    command runs script b's, which runs script c's: three callbacks nested, each under its own
    script's thread state, swapped in by the python plugin with PyThreadState_Swap() while the GIL
    stays held.

    First c spins (no system call: truth.spin_holding): b's callback made the last blocking call
    (recording itself), so take_gil() last wrote ceval.gil.last_holder with b's state, beneath;
    the GIL belongs to c's, the innermost (gdb reads both from the core; the test requires them to
    differ, the case it is about, up to 3.11; 3.12's PyThreadState_Swap() takes the GIL anew).
    pytstates must give the GIL to c's state; a's and b's states, beneath, hold their callbacks'
    frames and not the GIL. Then c parks in Python (the GIL released) and the kernel's core is
    taken."""
    import shutil
    import signal
    with servers.workdir("weechat") as work:
        state = os.path.join(work, "state")
        home = os.path.join(work, "weechat")
        autoload = os.path.join(home, "python", "autoload")
        os.makedirs(autoload)
        for script in ("a", "b", "c"):
            shutil.copy(os.path.join(servers.SCENARIOS, "weechat_nest.py"), os.path.join(autoload, script + ".py"))
        env = dict(SERVER_ENV, PYTSTATES_EMBEDDERS_DIR=work, HOME=work)
        argv = ["weechat-headless", "--dir", home, "--no-connect", "--plugins", "python", "--stdout", "--run-command", "/pytstates_a"]
        log = os.path.join(work, "weechat.log")
        with servers.process_group(argv, work, log, stop_signal=signal.SIGKILL, env=env) as proc:
            try:
                got = wait_functions(state, ["loaded_a", "loaded_b", "loaded_c", "run_a", "run_b", "spin_in_c"])
            except servers.ServerError:
                print(servers.tail(log))
                raise
            interps = {name: got["loaded_" + name]["interp"] for name in ("a", "b", "c")}
            print("weechat %d: scripts in interpreters %s" % (proc.pid, interps))
            expect(len(set(interps.values())) == 3 and 0 not in interps.values(), "three scripts, three sub-interpreters")
            expect(all(f["native_id"] == proc.pid for f in got.values()), "every callback on WeeChat's main thread")
            time.sleep(0.5)  # c is past its record, in its loop
            facts = [got["spin_in_c"]]
            beneath = {got["run_a"]["interp"]: "run_a", got["run_b"]["interp"]: "run_b"}
            order = {proc.pid: [interps["c"], interps["b"], interps["a"]]}

            def nested(report, where):
                """a's and b's states, suspended beneath c's on the same thread: their callbacks'
                frames, neither holding the GIL nor running on another thread."""
                for _, interp in agree.interpreters(report):
                    if interp["id"] in beneath:
                        with_frames = [ts for ts in interp["tstates"] if ts["frames"]]
                        expect(len(with_frames) == 1, "%s: interpreter %d has one state with frames: %s" % (where, interp["id"], with_frames), report)
                        ts = with_frames[0]
                        functions = [f["function"] for f in ts["frames"]]
                        expect(beneath[interp["id"]] in functions and not ts["holds_gil"] and ts["lwp"] in (None, proc.pid),
                               "%s: %s's state %s, beneath: frames %s, holds_gil %s, lwp %s" % (
                                   where, beneath[interp["id"]], ts["address"], functions, ts["holds_gil"], ts["lwp"]), report)
            examine(args, ["--pid", str(proc.pid)], facts, "weechat live", show=True, also=nested, nested=order)
            core = servers.gcore(proc.pid, work)
            report = examine(args, ["--core", core], facts, "weechat gcore", exe="/usr/bin/weechat-headless", core=core, show=True, also=nested, nested=order)
            mem = agree.gdb_gil("/usr/bin/weechat-headless", core, "weechat gcore")
            states = {i["id"]: [ts["address"] for ts in i["tstates"] if ts["frames"]] for _, i in agree.interpreters(report)}
            current = agree.gdb_current(mem, proc.pid)
            print("weechat gcore: gdb: GIL locked %s, last_holder %s, current %s; states with frames by interpreter %s"
                  % (mem["locked"], mem["last_holder"], current, states))
            expect(mem["locked"] == 1 and [current] == states[interps["c"]], "weechat gcore: gdb: the GIL locked, c's state current")
            if agree.version(report) < (3, 12):  # 3.12's PyThreadState_Swap() hands the GIL over through take_gil()
                expect([mem["last_holder"]] == states[interps["b"]], "weechat gcore: gdb: last_holder b's state (beneath)")
            os.unlink(core)
            servers.stop_holding(state)
            facts = [wait_functions(state, ["park_in_c"])["park_in_c"]]
            deadline = time.monotonic() + 30
            while servers.thread_syscall(proc.pid, proc.pid) != servers.OPENAT:
                expect(time.monotonic() < deadline, "weechat: c parks in openat(2) on the release FIFO")
                time.sleep(0.1)
            core = servers.kernel_core(proc.pid, work)
            examine(args, ["--core", core], facts, "weechat kernel core", exe="/usr/bin/weechat-headless", core=core, also=nested, nested=order)
    print("weechat ended")


# --------------------------------------------------------------------------- PostgreSQL plpython3u
def postgres_bin():
    """The newest PostgreSQL's programs (Debian installs each major version in its own directory)."""
    import glob
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    expect(found, "no PostgreSQL server is installed (scripts/setup installs it)")
    return os.path.dirname(found[-1])


def postgres(args):
    import shutil
    import signal
    PG_BIN = postgres_bin()
    with servers.workdir("postgres", world_writable=("run",)) as work:
        port = servers.free_port()
        data = os.path.join(work, "data")
        os.mkdir(data, 0o700)
        shutil.chown(data, "postgres", "postgres")
        log = os.path.join(work, "postgres.log")
        out = subprocess.run(["runuser", "-u", "postgres", "--", PG_BIN + "/initdb", "-D", data, "-A", "trust", "-U", "postgres"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        expect(out.returncode == 0, "initdb: " + out.stdout.decode(errors="replace")[-2000:])
        argv = [PG_BIN + "/postgres", "-D", data, "-k", os.path.join(work, "run"), "-p", str(port),
                "-c", "listen_addresses=127.0.0.1"]
        # SIGQUIT: immediate shutdown, the backends parked in Python cannot finish a smart one
        with servers.process_group(argv, work, log, user="postgres", stop_signal=signal.SIGQUIT) as proc:
            psql = ["psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1"]
            deadline = time.monotonic() + 60
            while subprocess.run(psql + ["-c", "SELECT 1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
                expect(time.monotonic() < deadline and proc.poll() is None, "PostgreSQL answers: " + servers.tail(log))
                time.sleep(0.3)
            out = subprocess.run(psql + ["-f", os.path.join(servers.SCENARIOS, "plpython.sql")], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=60)
            expect(out.returncode == 0, "plpython.sql: " + out.stdout.decode(errors="replace"))
            sessions = [subprocess.Popen(psql + ["-c", "SELECT %s('%s')" % (fn, work)], stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT) for fn in ("park_released", "park_holding")]
            try:
                facts = servers.wait_parked(os.path.join(work, "state"), 2, 0)
                for fact in facts:
                    backend = fact["pid"]
                    expect(fact["native_id"] == backend, "a backend runs Python on its only thread")
                    name = "postgres %s" % fact["function"]
                    examine(args, ["--pid", str(backend)], [fact], name + " live", show=True)
                    core = servers.gcore(backend, work)
                    examine(args, ["--core", core], [fact], name + " gcore", core=core)
                    os.unlink(core)
                # the backend holding the GIL, by the kernel (the postmaster then ends every backend)
                fact = next(f for f in facts if f["function"] == "park_in_plpy")
                core = servers.kernel_core(fact["pid"], data)
                examine(args, ["--core", core], [fact], "postgres park_in_plpy kernel core", core=core)
            finally:
                servers.release(os.path.join(work, "state"))
                for s in sessions:
                    if s.poll() is None:
                        s.kill()
                    s.wait()
    print("PostgreSQL stopped")


# ------------------------------------------------------------------------------ gdb's own Python
def gdb_python(args):
    import signal
    with servers.workdir("gdb") as work:
        state = os.path.join(work, "state")
        env = dict(os.environ, PYTSTATES_EMBEDDERS_DIR=work)
        argv = ["gdb", "-nx", "-q", "-batch", "-x", os.path.join(servers.SCENARIOS, "gdb_park.py")]
        log = os.path.join(work, "gdb.log")
        with servers.process_group(argv, work, log, stop_signal=signal.SIGKILL, env=env) as proc:
            facts = servers.wait_parked(state, 1, 0)
            expect(facts[0]["pid"] == proc.pid and facts[0]["native_id"] == proc.pid, "gdb runs Python on its main thread")
            examine(args, ["--pid", str(proc.pid)], facts, "gdb live", show=True)
            core = servers.gcore(proc.pid, work)
            examine(args, ["--core", core], facts, "gdb gcore", core=core)
            os.unlink(core)
            # gdb's own SIGSEGV handler prints its backtrace, then dies by the signal: the kernel's core
            core = servers.kernel_core(proc.pid, work, signal.SIGSEGV)
            report = examine(args, ["--core", core], facts, "gdb kernel core", core=core)
            crash = report["target"].get("crash") or {}
            expect(crash.get("signal") == 11 and crash.get("lwp") == proc.pid, "the core's crash: SIGSEGV on gdb's main thread (%s)" % crash)
    print("gdb ended")


# ------------------------------------------------------------------------------------ vim's :py3
def vim_python(args):
    import signal
    with servers.workdir("vim") as work:
        state = os.path.join(work, "state")
        env = dict(os.environ, PYTSTATES_EMBEDDERS_DIR=work)
        argv = ["vim.nox", "-u", "NONE", "-i", "NONE", "-N", "-n", "-es",
                "-c", "py3file " + os.path.join(servers.SCENARIOS, "vim_park.py"), "-c", "qa!"]
        log = os.path.join(work, "vim.log")
        with servers.process_group(argv, work, log, stop_signal=signal.SIGKILL, env=env) as proc:
            facts = servers.wait_parked(state, 1, 0)
            expect(facts[0]["pid"] == proc.pid and facts[0]["native_id"] == proc.pid, "vim runs Python on its main thread")
            examine(args, ["--pid", str(proc.pid)], facts, "vim live", show=True)
            core = servers.gcore(proc.pid, work)
            examine(args, ["--core", core], facts, "vim gcore", core=core)
            os.unlink(core)
            # vim's deadly-signal handler ends Python (its exit path) before it dies by the signal:
            # the kernel's core holds a runtime with no interpreter, as gdb reads it too
            core = servers.kernel_core(proc.pid, work, signal.SIGABRT)
            status, out, err = scenario.run_pytstates(args.pytstates, ["check", "--core", core])
            expect(status == 2 and err.count("\n") == 1 and "not initialised (no interpreter)" in err and not out,
                   "vim kernel core: one line, exit 2: %r" % err)
            gdb = subprocess.run(["gdb", "-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex", "core-file " + core,
                                  "-ex", "print/x (unsigned long) _PyRuntime.interpreters.head", "/usr/bin/vim.nox"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300).stdout.decode(errors="replace")
            expect("$1 = 0x0" in gdb, "vim kernel core: gdb reads no interpreter either:\n" + gdb[-1500:])
            print("vim kernel core: Python already ended; pytstates: %s" % err.strip())
    print("vim ended")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pytstates", required=True)
    p.add_argument("--gdb-script", required=True, help="build/plugin/gdb/pytstates.gdb")
    p.add_argument("--lldb-plugin", required=True, help="the pytstates-lldb plugin")
    p.add_argument("case")
    args = p.parse_args()
    cases = {"uwsgi-mount": lambda: uwsgi(args, False), "uwsgi-single": lambda: uwsgi(args, True),
             "mod_wsgi-daemon": lambda: mod_wsgi(args, "daemon"), "mod_wsgi-embedded": lambda: mod_wsgi(args, "embedded"),
             "mod_wsgi-first-state": lambda: mod_wsgi_first_state(args),
             "postgres": lambda: postgres(args), "gdb": lambda: gdb_python(args),
             "load": lambda: load(args), "vim": lambda: vim_python(args),
             "mod_python": lambda: mod_python(args), "weechat": lambda: weechat(args), "collectd": lambda: collectd(args)}
    if args.case not in cases:
        raise SystemExit("unknown case " + args.case)
    cases[args.case]()
    print("PASS embedders " + args.case)


if __name__ == "__main__":
    main()
