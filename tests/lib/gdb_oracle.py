# SPDX-License-Identifier: Apache-2.0
"""gdb as a second oracle: what gdb reads from a core through DWARF alone (libpython's or the
python executable's, glibc's from libc6-dbg, thread-locals through libthread_db), held against a
pytstates JSON report of the same core.

One file, two sides:
- inside gdb (`gdb -x gdb_oracle.py`): walk() prints one line `GDB-ORACLE {json}`;
- on the host: check(program, core, report, where) runs gdb once on the core and compares.

What gdb reads, with no help from pytstates:
- per runtime (every _PyRuntime gdb's objfiles define): gilstate.tstate_current (<= 3.11) and the
  autoTSS pthread key (gilstate.autoTSSkey / autoTSSkey);
- per interpreter: its thread-state list (address, native_thread_id, thread_id, state, the
  innermost Python code's name), its GIL's `locked`, `last_holder` (and `enabled` where the build
  has it): <= 3.11 _PyRuntime.ceval.gil, 3.12+ interp->ceval.gil;
- per thread: CPython's current thread state (_Py_tss_tstate, 3.12+, a thread-local read by
  gdb's TLS support), the autoTSS slot (struct pthread's specific_1stblock / specific[], valid
  only while its seq is __pthread_keys[key].seq, as pthread_getspecific says; 3.15's
  _Py_tss_gilstate thread-local), and the states its eval loops run: for each
  _PyEval_EvalFrameDefault frame, best first, the state whose frame chain holds its `frame`/`f`
  argument or its `entry_frame` local (3.12+), whose cframe chain holds its `cframe` local
  (3.11, 3.12; 3.10's `trace_info.cframe`) or its `prev_cframe`, whose frames alone run the code
  its `next_instr` points into (3.8, 3.9 release builds keep little else), else its `tstate`
  argument when that is a listed state (last: a location list may name a register that holds
  another value by then). Where two readings disagree, the comparison says so.
The same run prints `thread apply all bt 5` (said["backtraces"], for native_check) and evaluates
the C expressions a test asks for (said["values"]: a lock's owner).

What gdb cannot read (optimized out, no libthread_db, no glibc DWARF) is given as
{"unreadable": why}; the comparison prints every such fact and never passes over one silently.
"""
import json
import os
import re
import subprocess
import time

try:
    import gdb  # inside gdb
except ImportError:
    gdb = None

MARK = "GDB-ORACLE "
EVAL = "_PyEval_EvalFrameDefault"
MAX_CHAIN = 100000
MAX_FRAMES = 4096
BT_DEPTH = 5  # native_check.compare_with_gdb's depth


# ---------------------------------------------------------------- inside gdb

def _ulong():
    return gdb.lookup_type("unsigned long")


def _ptr(value):
    return int(value.cast(_ulong()))


def _hex(n):
    return None if n is None else "0x%x" % n


def _fields(value_or_type):
    t = value_or_type.type if isinstance(value_or_type, gdb.Value) else value_or_type
    t = t.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        t = t.target().strip_typedefs()
    return [f.name for f in t.fields()] if t.code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION) else []


def _plain(value):
    """An int from a plain, pointer or _Py_atomic_* ({_value}) field."""
    if "_value" in _fields(value):
        value = value["_value"]
    t = value.type.strip_typedefs()
    return _ptr(value) if t.code == gdb.TYPE_CODE_PTR else int(value)


def _ascii(obj):
    name = obj.cast(gdb.lookup_type("PyASCIIObject").pointer())
    length = int(name["length"])
    data = _ptr(name) + gdb.lookup_type("PyASCIIObject").sizeof
    return bytes(gdb.selected_inferior().read_memory(data, min(length, 256))).decode(errors="replace")


def _code_name(frame):
    """co_name of a frame's code: f_code (<= 3.12, and PyFrameObject), f_executable (3.13: a
    PyObject*; 3.14+: a tagged _PyStackRef)."""
    names = _fields(frame)
    if "f_code" in names:
        return _ascii(frame["f_code"].dereference()["co_name"])
    executable = frame["f_executable"]
    raw = int(executable["bits"]) & ~3 if "bits" in _fields(executable) else _ptr(executable)
    code = gdb.Value(raw).cast(gdb.lookup_type("PyCodeObject").pointer())
    return _ascii(code["co_name"])


def _python_frames(ts):
    """A thread state's frame chain, innermost first: [(address, is Python's own frame, frame)]."""
    names = _fields(ts)
    if "frame" in names:  # <= 3.10: PyFrameObject, f_back
        f, link = ts["frame"], "f_back"
    elif "current_frame" in names:  # 3.13+
        f, link = ts["current_frame"], "previous"
    else:  # 3.11, 3.12
        f, link = ts["cframe"]["current_frame"], "previous"
    out = []
    while _ptr(f) and len(out) < MAX_CHAIN:
        owner = int(f["owner"]) if "owner" in _fields(f) else 0
        # Frames owned by C (3.12+'s entry frames) are links of the chain, not Python's.
        out.append((_ptr(f), owner < 3, f))
        f = f[link]
    return out


def _code_range(frame):
    """The bytes of the code a frame runs, [start, end): where its eval loop's next_instr points.
    <= 3.10: co_code, a bytes object; 3.11+: co_code_adaptive, inside the code object."""
    names = _fields(frame)
    if "f_code" in names:
        code = frame["f_code"]
    else:
        executable = frame["f_executable"]
        raw = int(executable["bits"]) & ~3 if "bits" in _fields(executable) else _ptr(executable)
        code = gdb.Value(raw).cast(gdb.lookup_type("PyCodeObject").pointer())
    code = code.dereference()
    if "co_code_adaptive" in _fields(code.type):
        start = int(code["co_code_adaptive"].address)
        size = int(code["ob_base"]["ob_size"]) * 2
    else:
        data = code["co_code"].cast(gdb.lookup_type("PyBytesObject").pointer()).dereference()
        start = int(data["ob_sval"].address)
        size = int(data["ob_base"]["ob_size"])
    return start, start + size


def _cframes(ts):
    """3.10-3.12: the cframe chain (tstate->cframe, ->previous): each is an eval loop's local."""
    if "cframe" not in _fields(ts):
        return []
    # It ends at the state's own root_cframe, whose `previous` 3.10 leaves uninitialized.
    root = int(ts["root_cframe"].address) if "root_cframe" in _fields(ts) else None
    out, c = [], ts["cframe"]
    while _ptr(c) and len(out) < MAX_CHAIN:
        out.append(_ptr(c))
        if _ptr(c) == root or "previous" not in _fields(c):
            break
        try:
            c = c["previous"]
        except (gdb.error, gdb.MemoryError):
            break
    return out


def _read_gil(rt, interp):
    try:
        ceval = interp["ceval"] if "ceval" in _fields(interp) else None  # 3.8: none
        if ceval is not None and "gil" in _fields(ceval) and ceval["gil"].type.strip_typedefs().code == gdb.TYPE_CODE_PTR:  # 3.12+
            if not _ptr(ceval["gil"]):
                return {"unreadable": "interp->ceval.gil is NULL"}
            g = ceval["gil"].dereference()
        else:  # <= 3.11: one GIL per runtime
            g = rt["ceval"]["gil"]
        out = {"address": _hex(int(g.address)), "locked": bool(_plain(g["locked"])),
               "last_holder": _hex(_plain(g["last_holder"]))}
        if "enabled" in _fields(g):  # free-threaded builds
            out["enabled"] = bool(int(g["enabled"]))
        return out
    except (gdb.error, gdb.MemoryError) as e:
        return {"unreadable": "the GIL: %s" % e}


def _autotss_key(rt):
    names = _fields(rt)
    holder = rt["gilstate"] if "gilstate" in names and "autoTSSkey" in _fields(rt["gilstate"]) else rt
    if "autoTSSkey" not in _fields(holder):
        return None  # 3.15: a thread-local (_Py_tss_gilstate)
    tss = holder["autoTSSkey"]
    return int(tss["_key"]) if int(tss["_is_initialized"]) else -1


def _symbol(objfile, name):
    for lookup in ("lookup_global_symbol", "lookup_static_symbol"):
        try:
            sym = getattr(objfile, lookup)(name)
        except (gdb.error, AttributeError):
            sym = None
        if sym is not None:
            return sym
    return None


def _runtimes():
    """(objfile, _PyRuntime value) of every runtime gdb's objfiles define, by address."""
    seen = {}
    for objfile in gdb.objfiles():
        sym = _symbol(objfile, "_PyRuntime")
        if sym is None:
            continue
        try:
            value = sym.value()
            seen.setdefault(int(value.address), (objfile, value))
        except gdb.error:
            continue
    if not seen:
        value = gdb.parse_and_eval("_PyRuntime")
        seen[int(value.address)] = (None, value)
    return [seen[a] for a in sorted(seen)]


def _runtime(objfile, rt):
    interps, chains, cframes, codes = [], {}, {}, []
    interp = rt["interpreters"]["head"]
    while _ptr(interp) and len(interps) < 4096:
        tstates = []
        ts = interp["threads"]["head"] if "threads" in _fields(interp) else interp["tstate_head"]  # <= 3.10
        while _ptr(ts) and len(tstates) < MAX_CHAIN:
            address = _ptr(ts)
            entry = {"address": _hex(address), "thread_id": _hex(int(ts["thread_id"]))}
            names = _fields(ts)
            entry["native_thread_id"] = int(ts["native_thread_id"]) if "native_thread_id" in names else None
            entry["state"] = int(ts["state"]) if "state" in names else None
            try:
                frames = _python_frames(ts)
                for a, own, f in frames:
                    chains[a] = address
                    if own:
                        try:
                            codes.append(_code_range(f) + (address,))
                        except (gdb.error, gdb.MemoryError):
                            pass
                python = [f for _, own, f in frames if own]
                entry["top"] = _code_name(python[0]) if python else None
            except (gdb.error, gdb.MemoryError) as e:
                entry["top"] = {"unreadable": "its frame chain: %s" % e}
            try:
                for c in _cframes(ts):
                    cframes[c] = address
            except (gdb.error, gdb.MemoryError):
                pass
            tstates.append(entry)
            ts = ts["next"]
        interps.append({"address": _hex(_ptr(interp)), "id": int(interp["id"]), "gil": _read_gil(rt, interp),
                        "tstates": tstates})
        interp = interp["next"]
    out = {"address": _hex(int(rt.address)), "objfile": objfile.filename if objfile else None,
           "interpreters": interps, "autotss_key": _autotss_key(rt)}
    if "gilstate" in _fields(rt) and "tstate_current" in _fields(rt["gilstate"]):  # <= 3.11
        out["tstate_current"] = _hex(_plain(rt["gilstate"]["tstate_current"]) or None)
    return out, chains, cframes, codes


def _tls(objfile, name):
    """A thread-local of objfile on the selected thread, read by gdb's TLS support (libthread_db)."""
    sym = _symbol(objfile, name) if objfile is not None else None
    if sym is None:
        try:
            value = gdb.parse_and_eval(name)
        except gdb.error as e:
            return {"unreadable": "%s: %s" % (name, e)}
    else:
        try:
            value = sym.value(gdb.selected_frame())
        except (gdb.error, TypeError) as e:
            if "not yet allocated storage" in str(e):
                return None  # a thread older than the dlopen: the variable's initial value, NULL
            return {"unreadable": "%s: %s" % (name, e)}
    try:
        n = _ptr(value)
    except (gdb.error, gdb.MemoryError) as e:
        return {"unreadable": "%s: %s" % (name, e)}
    return _hex(n) if n else None


def _has_symbol(objfile, name):
    return objfile is not None and _symbol(objfile, name) is not None


def _pthread_key(fs_base, key):
    """pthread_getspecific(key) of the thread whose struct pthread is at fs_base (glibc's DWARF)."""
    try:
        pt = gdb.Value(fs_base).cast(gdb.lookup_type("struct pthread").pointer())
        if key < 32:
            slot = pt["specific_1stblock"][key]
        else:
            block = pt["specific"][key // 32]
            if not _ptr(block):
                return None
            slot = block[key % 32]
        data, seq = _ptr(slot["data"]), int(slot["seq"])
    except (gdb.error, gdb.MemoryError) as e:
        return {"unreadable": "struct pthread's slot of key %d: %s" % (key, e)}
    # A slot left over from a deleted key: pthread_getspecific says NULL. Every libc's key table
    # is asked (dlmopen: each namespace has its own libc, and its own keys, over one struct pthread).
    seqs = []
    for objfile in gdb.objfiles():
        name = os.path.basename((objfile.owner or objfile).filename or "")
        sym = _symbol(objfile, "__pthread_keys") if name.startswith("libc.so") else None
        try:
            if sym is not None:
                seqs.append(int(sym.value()[key]["seq"]))
        except (gdb.error, gdb.MemoryError):
            pass
    if seqs and seq not in seqs:
        return None
    return _hex(data) if data else None


def _read_var(frame, name, address=False):
    """A variable of a gdb frame (name, or name.field) as an int, or None where it is missing or
    optimized out; address: the address it lives at (a local the eval loop links into tstate)."""
    try:
        path = name.split(".")
        value = frame.read_var(path[0])
        for field in path[1:]:
            value = value[field]
        if address:
            return int(value.address) if value.address is not None else None
        if value.is_optimized_out:
            return None
        return _ptr(value)
    except (ValueError, gdb.error, gdb.MemoryError):
        return None


def _eval_loops(chains, cframes, codes, listed):
    """The selected thread's eval loops, innermost first: the state each runs and how gdb knows."""
    out = []
    try:
        frame = gdb.newest_frame()
    except gdb.error:
        return out
    level = 0
    while frame is not None and level < MAX_FRAMES:
        try:
            name = frame.name()
        except gdb.error:
            name = None
        if name == EVAL:
            found = {}
            for var in ("frame", "f"):
                a = _read_var(frame, var)
                if a and a in chains:
                    found.setdefault("frame_argument", chains[a])
            a = _read_var(frame, "entry_frame", address=True)
            if a and a in chains:
                found["entry_frame"] = chains[a]
            for var in ("cframe", "trace_info.cframe"):  # 3.11, 3.12; 3.10
                a = _read_var(frame, var, address=True)
                if a and a in cframes:
                    found["cframe"] = cframes[a]
            a = _read_var(frame, "prev_cframe")  # the cframe it links its own to: the state's chain too
            if a and a in cframes:
                found.setdefault("cframe", cframes[a])
            # next_instr points into the code the loop runs: the state whose frames alone run that code.
            a = _read_var(frame, "next_instr")
            owners = {ts for start, end, ts in codes if a is not None and start <= a < end}
            if len(owners) == 1:
                found["next_instr"] = owners.pop()
            t = _read_var(frame, "tstate")
            if t and t in listed:
                found["tstate_argument"] = t
            loop = {"level": level}
            for via in ("frame_argument", "entry_frame", "cframe", "next_instr", "tstate_argument"):
                if via in found:
                    loop["tstate"], loop["via"] = _hex(found[via]), via
                    break
            else:
                loop["unreadable"] = "frame #%d %s: its frame/f argument, entry_frame, cframe, next_instr and tstate are optimized out, or name no single listed state" % (level, EVAL)
            if len(set(found.values())) > 1:
                loop["disagree"] = {k: _hex(v) for k, v in found.items()}
            out.append(loop)
        try:
            frame = frame.older()
        except gdb.error:
            break
        level += 1
    return out


def walk():
    runtimes, chains, cframes, codes, listed = [], {}, {}, [], set()
    for objfile, rt in _runtimes():
        one, c, cf, co = _runtime(objfile, rt)
        runtimes.append((objfile, one))
        chains.update(c)
        cframes.update(cf)
        codes += co
        listed.update(int(t["address"], 16) for i in one["interpreters"] for t in i["tstates"])
    threads = []
    for thread in sorted(gdb.selected_inferior().threads(), key=lambda t: t.ptid[1]):
        thread.switch()
        row = {"lwp": thread.ptid[1]}
        try:
            fs_base = int(gdb.parse_and_eval("$fs_base"))
            row["pthread"] = _hex(fs_base)
        except gdb.error as e:
            fs_base = None
            row["pthread"] = {"unreadable": "$fs_base: %s" % e}
        current, autotss = [], []
        for objfile, one in runtimes:
            if _has_symbol(objfile, "_Py_tss_tstate") or "tstate_current" not in one:
                current.append(_tls(objfile, "_Py_tss_tstate"))
            key = one["autotss_key"]
            if key is None:
                autotss.append(_tls(objfile, "_Py_tss_gilstate"))
            elif key < 0 or fs_base is None:
                autotss.append(None if key < 0 else {"unreadable": "no struct pthread"})
            else:
                autotss.append(_pthread_key(fs_base, key))
        if current:
            row["current"] = current
        row["autotss"] = autotss
        row["eval"] = _eval_loops(chains, cframes, codes, listed)
        threads.append(row)
    # native_check's backtraces from this same run (tests that compare native frames with gdb's
    # need no second gdb on the core): `thread apply all bt`, as native_check.gdb_backtraces asks.
    gdb.execute("set width 0")
    gdb.execute("set print frame-arguments none")
    try:
        backtraces = gdb.execute("thread apply all bt %d" % BT_DEPTH, to_string=True)
    except gdb.error as e:
        backtraces = "bt failed: %s" % e
    # Expressions a test asks for besides (PYTSTATES_ORACLE_EXPRS, a JSON list): a lock's owner.
    values = {}
    for expr in json.loads(os.environ.get("PYTSTATES_ORACLE_EXPRS") or "[]"):
        try:
            values[expr] = int(gdb.parse_and_eval(expr))
        except (gdb.error, gdb.MemoryError) as e:
            values[expr] = {"unreadable": str(e)}
    print(MARK + json.dumps({"runtimes": [one for _, one in runtimes], "threads": threads, "backtraces": backtraces,
                             "values": values}))


# ---------------------------------------------------------------- on the host

def gdb_argv(program, core, sysroot=None, debug_dir=None, solib_path=None):
    """The one gdb run: batch, no init file, no debuginfod; the program's own DWARF and glibc's.
    Thread-locals are read through the host's libthread_db: a core of a newer glibc (Debian
    unstable's roots, 2.43) has none gdb 13 can load, and its thread-locals are unreadable."""
    argv = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off", "-iex", "set auto-load safe-path /"]
    if sysroot:
        argv += ["-iex", "set sysroot " + sysroot]
    if debug_dir:
        argv += ["-iex", "set debug-file-directory " + debug_dir]
    if solib_path:
        argv += ["-iex", "set solib-search-path " + solib_path]
    return argv + ["-ex", "core-file " + core, "-x", os.path.abspath(__file__.replace(".pyc", ".py")), program]


def read(program, core, sysroot=None, debug_dir=None, solib_path=None, timeout=300, exprs=()):
    """What gdb reads of the core (the GDB-ORACLE object); AssertionError with gdb's output when
    gdb printed none. exprs: C expressions gdb evaluates too (said["values"][expr]: an int)."""
    started, cpu = time.monotonic(), _children_cpu()
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    env["PYTSTATES_ORACLE_EXPRS"] = json.dumps(list(exprs))
    out = subprocess.run(gdb_argv(program, core, sysroot, debug_dir, solib_path), stdin=subprocess.DEVNULL, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout).stdout.decode(errors="replace")
    m = re.search("^" + re.escape(MARK) + "(.*)$", out, re.M)
    if m is None:
        raise AssertionError("gdb read nothing of %s:\n%s" % (core, out[-3000:]))
    said = json.loads(m.group(1))
    said["gdb_notes"] = [line for line in out.splitlines() if "libthread_db" in line or "warning:" in line][:20]
    said["gdb_seconds"] = time.monotonic() - started
    said["gdb_cpu_seconds"] = _children_cpu() - cpu
    return said


def _children_cpu():
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def unreadable(value):
    return isinstance(value, dict) and "unreadable" in value


class Comparison:
    """Facts compared, facts gdb could not read (printed), and differences."""

    def __init__(self, where):
        self.where, self.facts, self.unread, self.problems = where, 0, [], []
        self.kinds = {"thread": 0, "interpreter": 0, "process": 0}  # facts per thread, per interpreter (and its states), the rest

    def eq(self, what, gdb_says, pytstates_says):
        if unreadable(gdb_says):
            self.unread.append("%s: %s" % (what, gdb_says["unreadable"]))
            return
        self.facts += 1
        kind = "thread" if what.startswith("LWP ") else "interpreter" if what.startswith(("interpreter ", "tstate ")) else "process"
        self.kinds[kind] += 1
        if gdb_says != pytstates_says:
            self.problems.append("%s: gdb %s, pytstates %s" % (what, json.dumps(gdb_says), json.dumps(pytstates_says)))

    def cannot(self, what, why):
        self.unread.append("%s: %s" % (what, why))


STATES = {0: "detached", 1: "attached", 2: "suspended"}


def one_value(values):
    """The single value of a per-runtime list (None when all are None); unreadable when any is
    and no other names a state."""
    set_ = sorted({v for v in values if v is not None and not unreadable(v)})
    if len(set_) > 1:
        return {"unreadable": "two runtimes name a state on this thread: %s" % set_}
    if set_:
        return set_[0]
    bad = [v for v in values if unreadable(v)]
    return bad[0] if bad else None


def compare(said, report, where):
    """Holds a pytstates report against gdb's reading (read()); returns the Comparison."""
    c = Comparison(where)
    interps = {i["address"]: (rt, i) for rt in report["runtimes"] for i in rt["interpreters"]}
    tstates = {t["address"]: (i, t) for _, i in interps.values() for t in i["tstates"]}
    rows = {t["lwp"]: t for t in report["threads"]}
    c.eq("the runtimes' addresses", sorted(r["address"] for r in said["runtimes"]), sorted(r["address"] for r in report["runtimes"]))
    c.eq("the threads (LWPs)", sorted(t["lwp"] for t in said["threads"]), sorted(rows))
    c.eq("the interpreters", sorted(i["address"] for r in said["runtimes"] for i in r["interpreters"]), sorted(interps))
    # What runs on which thread, by gdb's reading: eval loops, and CPython's current state.
    current = {}
    for t in said["threads"]:
        if "current" in t:
            current[t["lwp"]] = one_value(t["current"])
    for grt in said["runtimes"]:
        for gi in grt["interpreters"]:
            mine = interps.get(gi["address"], (None, None))[1]
            who = "interpreter %s" % gi["address"]
            c.eq(who + " is listed", True, mine is not None)
            if mine is None:
                continue
            c.eq(who + " id", gi["id"], mine["id"])
            listed = {t["address"]: t for t in mine["tstates"]}
            c.eq(who + " thread states", sorted(t["address"] for t in gi["tstates"]), sorted(listed))
            for gt in gi["tstates"]:
                t = listed.get(gt["address"])
                if t is None:
                    continue
                tw = "tstate %s" % gt["address"]
                c.eq(tw + " thread_id", gt["thread_id"], t["thread_id"])
                c.eq(tw + " native_thread_id", gt["native_thread_id"], t["native_thread_id"])
                if gt["state"] is not None:
                    c.eq(tw + " state", STATES.get(gt["state"], gt["state"]), t.get("state"))
                if "frames" in t:
                    c.eq(tw + " innermost code", gt["top"], t["frames"][0]["function"] if t["frames"] else None)
            _compare_gil(c, grt, gi, mine, said, current)
    for t in said["threads"]:
        row = rows.get(t["lwp"])
        if row is None:
            continue
        who = "LWP %d" % t["lwp"]
        c.eq(who + " pthread", t["pthread"], row["pthread"])
        if "current" in t:
            c.eq(who + " current_tstate (_Py_tss_tstate)", current[t["lwp"]], row["current_tstate"])
        c.eq(who + " autotss_tstate", one_value(t["autotss"]), row["autotss_tstate"])
        for loop in t["eval"]:
            lw = "%s eval loop at frame #%d" % (who, loop["level"])
            if "unreadable" in loop:
                c.cannot(lw, loop["unreadable"])
                continue
            if "disagree" in loop:
                c.cannot(lw + " (taken by %s)" % loop["via"], "gdb's readings disagree: %s" % loop["disagree"])
            ts = tstates.get(loop["tstate"], (None, None))[1]
            c.eq("%s runs %s (%s): its lwp" % (lw, loop["tstate"], loop["via"]), t["lwp"], ts and ts["lwp"])
    _tstate_current(c, said, report, rows)
    return c


def _tstate_current(c, said, report, rows):
    """<= 3.11: gilstate.tstate_current is one value per runtime; pytstates puts it on the thread
    whose stack runs it. gdb places it where one of its eval loops runs it; elsewhere it says so
    and holds only that one thread, and no other, has it as current_tstate."""
    currents = {r["tstate_current"] for r in said["runtimes"] if r.get("tstate_current")}
    if len(currents) > 1:
        # One current_tstate per thread in the JSON, two runtimes' pointers: which one a thread
        # shows is not gdb's to say; each shown must be one of them.
        c.cannot("the threads' current_tstate", "%d runtimes have a gilstate.tstate_current (%s); held: each thread shows "
                 "one of them or null" % (len(currents), sorted(currents)))
        c.eq("threads whose current_tstate is no runtime's gilstate.tstate_current", [],
             sorted(lwp for lwp, row in rows.items() if row["current_tstate"] not in currents | {None}))
        return
    for grt in said["runtimes"]:
        if "tstate_current" not in grt:
            continue
        tc = grt["tstate_current"]
        runners = sorted({t["lwp"] for t in said["threads"] for loop in t["eval"] if loop.get("tstate") == tc}) if tc else []
        have = sorted(lwp for lwp, row in rows.items() if row["current_tstate"] == tc) if tc else []
        others = sorted(lwp for lwp, row in rows.items() if row["current_tstate"] not in (None, tc))
        c.eq("runtime %s: threads whose current_tstate is another than gilstate.tstate_current %s" % (grt["address"], tc), [], others)
        if not tc:
            continue
        if len(runners) == 1:
            c.eq("runtime %s: the thread whose current_tstate is gilstate.tstate_current %s (its eval loop runs it)" % (grt["address"], tc),
                 runners, have)
        else:
            c.cannot("runtime %s: the thread of gilstate.tstate_current %s" % (grt["address"], tc),
                     "no single eval loop runs it (%s); held: one thread has it" % (runners or "none"))
            c.eq("runtime %s: the number of threads whose current_tstate is gilstate.tstate_current" % grt["address"], 1, len(have))


def _compare_gil(c, grt, gi, mine, said, current):
    who = "interpreter %s GIL" % gi["address"]
    g = gi["gil"]
    if unreadable(g):
        c.cannot(who, g["unreadable"])
        return
    if g.get("enabled") is False:
        c.eq(who + " (disabled: free-threaded)", "disabled", mine.get("gil"))
        c.eq(who + " holder (disabled)", None, mine["gil_holder"])
        return
    if not g["locked"]:
        c.eq(who + " holder (unlocked)", None, mine["gil_holder"])
        c.eq(who + " gil_taken_by (unlocked)", None, mine.get("gil_taken_by"))
        return
    last = g["last_holder"]
    if "tstate_current" in grt:  # <= 3.11
        holder = grt["tstate_current"] or last
        why = "gilstate.tstate_current" if grt["tstate_current"] else "last_holder (tstate_current NULL)"
    else:
        # 3.12+: the current state of the one thread whose current state uses this GIL; else last_holder.
        states = {t["address"] for ri in said["runtimes"] for i in ri["interpreters"]
                  if not unreadable(i["gil"]) and i["gil"]["address"] == g["address"] for t in i["tstates"]}
        bad = [lwp for lwp, v in current.items() if unreadable(v)]
        running = sorted({v for v in current.values() if not unreadable(v) and v in states})
        if bad and not running:
            c.cannot(who + " holder", "_Py_tss_tstate unreadable on LWP %s" % bad)
            return
        holder = running[0] if len(running) == 1 else last
        why = "the current state of the one thread running its interpreters" if len(running) == 1 else \
            "last_holder (%d threads run its interpreters)" % len(running)
    c.eq("%s holder (locked; %s)" % (who, why), holder, mine["gil_holder"])
    c.eq("%s gil_taken_by (last_holder where it differs)" % who, last if last != holder else None, mine.get("gil_taken_by"))


def check(program, core, report, where, sysroot=None, debug_dir=None, solib_path=None, expect=None, exprs=()):
    """Runs gdb once on the core, compares, prints what it compared and what gdb could not read;
    raises AssertionError (or calls expect(False, message)) on a difference. Returns gdb's reading."""
    said = read(program, core, sysroot, debug_dir, solib_path, exprs=exprs)
    c = compare(said, report, where)
    summarize(c, said, where)
    if c.problems:
        message = "%s: pytstates and gdb's own reading differ:\n  %s" % (where, "\n  ".join(c.problems))
        if expect is not None:
            expect(False, message)
        raise AssertionError(message)
    return said


def summarize(c, said, where):
    """Prints what was compared, every fact gdb could not read and every difference."""
    for u in c.unread:
        print("%s: gdb could not read %s" % (where, u))
    n_threads = len(said["threads"])
    n_tstates = sum(len(i["tstates"]) for r in said["runtimes"] for i in r["interpreters"])
    print("%s: gdb oracle: %d facts compared (%d per thread, %d per interpreter, %d per process; %d threads, %d thread states, "
          "%d eval loops), %d unreadable, %d differ; gdb ran %.2f s (%.2f s of CPU)" % (
              where, c.facts, c.kinds["thread"], c.kinds["interpreter"], c.kinds["process"], n_threads, n_tstates,
              sum(len(t["eval"]) for t in said["threads"]), len(c.unread), len(c.problems),
              said.get("gdb_seconds", 0), said.get("gdb_cpu_seconds", 0)))
    for p in c.problems:
        print("%s: DIFFERS %s" % (where, p))


if gdb is not None and __name__ == "__main__":
    walk()
