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


def examine(args, target, facts, where, exe=None, core=None, gil=True, show=False):
    """pytstates check on a live process or a core, in JSON, --native and text."""
    status, report = pytstates(args, target, ["--json"])
    agree.check_report(report, facts, where, gil=gil)
    expect(status == 0, "%s: exit status %d with no error finding" % (where, status), report)
    # without DWARF: layouts from _Py_DebugOffsets or the built-in tables, no eval-loop arguments
    _, bare = pytstates(args, target, ["--json", "--no-dwarf"])
    agree.check_report(bare, facts, where + " --no-dwarf", gil=gil)
    if core:
        expect(agree.attribution(bare) == agree.attribution(report), "%s: --no-dwarf attributes alike" % where)
    _, native = pytstates(args, target, ["--json", "--native"])
    if core:  # the same bytes twice: both snapshots alike
        agree.check_report(native, facts, where + " --native", gil=gil)
    agree.check_native(native, native, where)
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
            agree.check_report(got, facts, "%s in %s" % (where, name), gil=gil)
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
def warm_up(port, rounds=4, threads=6):
    """Mixed traffic: `threads` concurrent requests to each mount in turn, held long enough that
    every request thread serves one, until each thread has served every application group.
    Returns {native id: interpreters it served}."""
    seen = {}
    for _ in range(rounds):
        for mount in ("alpha", "beta", "gamma"):
            reqs = Requests(port)
            for _ in range(threads):
                reqs.send("/%s/?do=hold&s=0.3" % mount)
            for status, body in reqs.wait():
                expect(status == 200, "warm-up request to /%s: %s %s" % (mount, status, body))
                seen.setdefault(body["native_id"], set()).add(body["interp"])
        if len(seen) >= threads and all(len(v) == 3 for v in seen.values()):
            break
    return seen


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
            for mount in ("alpha", "beta", "gamma"):
                hello = servers.wait_answering(port, "/%s/?do=hello" % mount, proc, log)
                print("mod_wsgi %s /%s: interpreter %d in process %d" % (mode, mount, hello["interp"], hello["pid"]))
                expect(hello["pid"] != proc.pid, "requests run in a child, not in Apache's parent")
            seen = warm_up(port)
            print("%s warm-up: interpreters each request thread served: %s" % (
                name, {lwp: sorted(v) for lwp, v in sorted(seen.items())}))
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
            for _ in range(threads):
                reqs.send("/beta/?do=hold&s=0.5")
            first = {body["native_id"] for status, body in reqs.wait() if status == 200}
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
                    expect(status == 0, where + ": exit status %d" % status)
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
             "load": lambda: load(args), "vim": lambda: vim_python(args)}
    if args.case not in cases:
        raise SystemExit("unknown case " + args.case)
    cases[args.case]()
    print("PASS embedders " + args.case)


if __name__ == "__main__":
    main()
