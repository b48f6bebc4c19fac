# SPDX-License-Identifier: Apache-2.0
"""lldb commands py-tstates, pybind-internals, py-tstates-check and py-tstates-record, for an lldb
whose Python works (Debian 13's lldb-19): (lldb) command script import PREFIX/share/pytstates/lldb/pytstates.py

Memory through SBProcess.ReadMemory (a core's clean file pages, which lldb's core reader leaves
out, through SBTarget.ReadMemory from the module's file), threads and their registers through
SBThread and SBFrame, named per machine by the library (register_names); the auxiliary vector from
/proc for a process on this machine, else rebuilt from the executable's ELF header at its load
address as the C++ plugin for lldb-14 does (plugin/lldb). A thread lldb gives no thread pointer
(a core) gets it from glibc's thread lists in memory (the engine). Errors are one line on the
command's result, never a traceback. Python >= 3.6 syntax only.
"""
import os
import struct
import sys

import lldb

from .core import core as _core, error as _core_error

_MASK = 0xFFFFFFFFFFFFFFFF
_AT_PHDR, _AT_PHNUM, _AT_ENTRY, _AT_SYSINFO_EHDR = 3, 5, 9, 33


class _Failure(Exception):
    """One line for the user: the command fails with it."""


def _machine(target):
    triple = target.GetTriple() or ""
    arch = triple.split("-")[0]
    if arch in ("arm64", "aarch64"):
        return "aarch64"
    return arch


def _is_live(process):
    name = process.GetPluginName() or ""
    return "core" not in name.lower() and process.GetState() != lldb.eStateExited


def _is_local(target, live):
    platform = target.GetPlatform()
    return bool(live and platform.IsValid() and platform.GetName() == "host")


def _reader(target, process):
    """read_memory(address, length) -> bytes or None."""

    def read(address, length):
        error = lldb.SBError()
        data = process.ReadMemory(address, length, error)
        if error.Success() and data is not None and len(data) == length:
            return data
        where = target.ResolveLoadAddress(address)
        if where.IsValid() and where.GetSection().IsValid():
            file_error = lldb.SBError()
            from_file = target.ReadMemory(where, length, file_error)
            if file_error.Success() and from_file:
                return from_file
        return data if error.Success() else None

    return read


def _register(frame, name):
    value = frame.FindRegister(name)
    if not value.IsValid():
        return None
    error = lldb.SBError()
    number = value.GetValueAsUnsigned(error, 0)
    return number & _MASK if error.Success() else None


def _registers(frame, names):
    values = []
    for name in names:
        value = _register(frame, name)
        if value is None:
            return []
        values.append(value)
    return values


def _siginfo(thread):
    """(lwp, signo, code, address, sender_pid, sender_uid) of a thread stopped by a signal: from
    its siginfo where lldb has it (SBThread.GetSiginfo, lldb >= 15), else the signal alone."""
    if thread.GetStopReason() != lldb.eStopReasonSignal or thread.GetStopReasonDataCount() < 1:
        return None
    lwp = thread.GetThreadID()
    signo = thread.GetStopReasonDataAtIndex(0)
    get = getattr(thread, "GetSiginfo", None)
    if get is not None:
        try:
            info = get()
            if info.IsValid() and info.GetChildMemberWithName("si_signo").GetValueAsSigned() == signo:
                code = info.GetChildMemberWithName("si_code").GetValueAsSigned()
                fields = info.GetChildMemberWithName("_sifields")
                address = fields.GetChildMemberWithName("_sigfault").GetChildMemberWithName("si_addr").GetValueAsUnsigned() & _MASK
                kill = fields.GetChildMemberWithName("_kill")
                pid = kill.GetChildMemberWithName("si_pid").GetValueAsSigned()
                uid = kill.GetChildMemberWithName("si_uid").GetValueAsSigned()
                return (lwp, signo, code, address, pid, uid)
        except Exception:  # an lldb whose siginfo type differs: the signal alone
            pass
    return (lwp, signo, _core.NO_SIGINFO, 0, 0, 0)


def _threads(target, process, live, local):
    """(lwp, thread pointer, registers, syscall) of every thread, lldb's thread number of each
    LWP, and the signal the process stopped or died of."""
    machine = _machine(target)
    names = _core.register_names(machine)
    tp_name = _core.thread_pointer_register(machine)
    rows, numbers, crash = [], {}, None
    for i in range(process.GetNumThreads()):
        thread = process.GetThreadAtIndex(i)
        lwp = thread.GetThreadID()
        frame = thread.GetFrameAtIndex(0)
        thread_pointer = (_register(frame, tp_name) or 0) if tp_name else 0
        registers = _registers(frame, names) if names else []
        syscall = -1
        syscall_name = _core.syscall_register(machine)
        orig = _register(frame, syscall_name) if syscall_name else None
        if orig is not None:
            syscall = orig if orig < (1 << 63) else -1
        elif local:
            syscall = _core.SYSCALL_UNKNOWN  # the engine reads /proc/PID/task/LWP/syscall
        rows.append((lwp, thread_pointer, registers, syscall))
        numbers[lwp] = thread.GetIndexID()
        # A core's first thread took the fatal signal; in a live process, the thread lldb stopped
        # on a signal (the engine keeps the fatal ones).
        if crash is None and (live or i == 0):
            crash = _siginfo(thread)
    return rows, numbers, crash


def _read_header(target, address, size):
    error = lldb.SBError()
    data = target.ReadMemory(target.ResolveLoadAddress(address), size, error)
    return data if error.Success() and data is not None and len(data) == size else None


def _auxv(target, process, live, local):
    """{type: value}: /proc/PID/auxv for a process on this machine; else AT_PHDR, AT_PHNUM and
    AT_ENTRY from the executable's ELF header at its load address, and the vDSO lldb lists."""
    values = {}
    if live and local:
        try:
            with open("/proc/%d/auxv" % process.GetProcessID(), "rb") as f:
                data = f.read()
            for offset in range(0, len(data) - 15, 16):
                key, value = struct.unpack_from("<QQ", data, offset)
                if key == 0:
                    break
                values[key] = value
        except (OSError, struct.error):
            values = {}
        if values:
            return values
    exe = target.GetModuleAtIndex(0)
    if exe.IsValid():
        header = exe.GetObjectFileHeaderAddress().GetLoadAddress(target)
        ehdr = _read_header(target, header, 64) if header != lldb.LLDB_INVALID_ADDRESS else None
        if ehdr is not None and ehdr[:4] == b"\x7fELF":
            entry, phoff = struct.unpack_from("<QQ", ehdr, 24)
            phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
            first_load = 0
            for i in range(phnum):
                ph = _read_header(target, header + phoff + i * phentsize, 56)
                if ph is None:
                    break
                p_type, _flags, _offset, p_vaddr = struct.unpack_from("<IIQQ", ph, 0)
                if p_type == 1:  # PT_LOAD
                    first_load = p_vaddr & ~0xFFF
                    break
            bias = header - first_load
            values[_AT_PHDR] = header + phoff
            values[_AT_PHNUM] = phnum
            values[_AT_ENTRY] = (bias + entry) & _MASK
    for i in range(target.GetNumModules()):
        module = target.GetModuleAtIndex(i)
        if module.GetFileSpec().GetFilename() == "[vdso]":
            address = module.GetObjectFileHeaderAddress().GetLoadAddress(target)
            if address != lldb.LLDB_INVALID_ADDRESS:
                values[_AT_SYSINFO_EHDR] = address
    return values


def _debug_dirs(debugger):
    """target.debug-file-search-paths, as `settings show` prints it ("[0]: /path")."""
    dirs = []
    lines = lldb.SBDebugger.GetInternalVariableValue("target.debug-file-search-paths", debugger.GetInstanceName())
    for i in range(lines.GetSize() if lines else 0):
        for line in (lines.GetStringAtIndex(i) or "").splitlines():
            if "]: " in line:
                path = line.split("]: ", 1)[1].strip()
                if path:
                    dirs.append(path)
    return dirs


def _executable(target):
    spec = target.GetExecutable()
    return spec.fullpath if spec.IsValid() and spec.fullpath else ""


def _selected(debugger, exe_ctx):
    target = exe_ctx.GetTarget() if exe_ctx is not None and exe_ctx.GetTarget().IsValid() else debugger.GetSelectedTarget()
    process = target.GetProcess() if target.IsValid() else lldb.SBProcess()
    return target, process


def _split(command):
    import shlex
    try:
        return shlex.split(command or "")
    except ValueError as e:
        raise _Failure(str(e))


def _guarded(name, body, debugger, command, exe_ctx, result):
    try:
        if _core is None:
            raise _Failure("pytstates cannot run in lldb's Python: %s" % _core_error)
        text = body(debugger, _split(command), exe_ctx)
        result.PutCString(text)
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
    except _Failure as e:
        result.SetError("%s: %s" % (name, e))
    except Exception as e:  # never a traceback into the user's session
        result.SetError("%s: %s" % (name, e))


def _terminal_width(debugger):
    """lldb's term-width where lldb writes to a terminal (its driver sets it from the terminal's
    size); 0, unwrapped, where it does not (lldb -b into a pipe keeps its default 80, no
    terminal's), as the CLI does."""
    try:
        out = debugger.GetOutputFile().GetFile()
        tty = out is not None and out.isatty()
    except Exception:  # an lldb without SBFile, a closed file: no terminal known
        tty = False
    return debugger.GetTerminalWidth() if tty else 0


def _run(command_name):
    def body(debugger, args, exe_ctx):
        # lldb's own columns first; a --width typed comes later and wins.
        args = ["--width", str(_terminal_width(debugger))] + args
        target, process = _selected(debugger, exe_ctx)
        if not process.IsValid() or process.GetNumThreads() == 0:
            raise _Failure("no process or core: attach to a process or load a core first (target create --core FILE)")
        live = _is_live(process)
        local = _is_local(target, live)
        threads, numbers, crash = _threads(target, process, live, local)
        status, output, error = _core.run(command_name, args, _reader(target, process), threads, _auxv(target, process, live, local),
                                          _executable(target), process.GetProcessID(), live, local, numbers, "", crash,
                                          _debug_dirs(debugger))
        if status == 2:
            raise _Failure(error)
        return output
    return body


def py_tstates(debugger, command, exe_ctx, result, internal_dict):
    _guarded("py-tstates", _run("tstates"), debugger, command, exe_ctx, result)


def pybind_internals(debugger, command, exe_ctx, result, internal_dict):
    _guarded("pybind-internals", _run("internals"), debugger, command, exe_ctx, result)


def py_tstates_check(debugger, command, exe_ctx, result, internal_dict):
    _guarded("py-tstates-check", _run("check"), debugger, command, exe_ctx, result)


# py-tstates-record: one breakpoint per probe the library plans; each hit reads the probe's
# registers, a key and a few return addresses, hands them to the library and lets the program on.
# armed: the options of an `on` typed before the program ran (or before it loaded CPython); a
# hook breakpoint (_ARMED_HOOK) at the entries of the functions that create a thread state, by
# name (lldb resolves it in whatever module defines one when it loads), plans and sets the
# breakpoints before CPython's first thread state is returned.
_recorder = {"breakpoints": [], "target": None, "probes": [], "frames": 4, "armed": None}
_ARMED_HOOK = "pytstates_record_armed"  # no "-": lldb refuses it in a breakpoint name
# The module lldb imported (share/pytstates/lldb/pytstates.py): lldb finds commands and breakpoint
# callbacks by a name in its session ("pytstates.probe_hit"), which this package's is not.
_entry = {"module": __name__}
ENTRY_POINTS = ("py_tstates", "pybind_internals", "py_tstates_check", "py_tstates_record", "probe_hit", "exit_hit", "armed_hit")
# The pyt commands and the summaries (lldb_nav): reached through this module's names too.
from . import lldb_nav as _nav  # noqa: E402
ENTRY_POINTS += _nav.ENTRY_POINTS
for _name in _nav.ENTRY_POINTS:
    globals()[_name] = getattr(_nav, _name)


def _pcs(thread):
    """The pcs of the thread's frames, innermost first, unwound only as far as the library asks."""
    i = 0
    while True:
        frame = thread.GetFrameAtIndex(i)
        if not frame.IsValid():
            return
        yield frame.GetPC()
        i += 1


def probe_hit(frame, bp_loc, extra_args, internal_dict):
    """A breakpoint callback (SBBreakpoint.SetScriptCallbackFunction): the library reads what the
    hit keeps through lldb (registers, the TLS key, the frames' pcs); never stops."""
    try:
        index = extra_args.GetValueForKey("index").GetIntegerValue()
        thread = frame.GetThread()
        process = thread.GetProcess()

        def read_register(name):
            value = _register(frame, name)
            if value is None:
                raise ValueError(name)
            return value

        def read_memory(address, length):
            error = lldb.SBError()
            data = process.ReadMemory(address, length, error)
            return data if error.Success() else None

        _core.record_hit_from(index, read_register, read_memory, thread.GetThreadID(), _pcs(thread))
    except Exception:  # a hit that cannot be read is not recorded; the program runs on
        pass
    return False


def exit_hit(frame, bp_loc, extra_args, internal_dict):
    """At _exit the modules are still mapped: name the recorded frames before they go."""
    try:
        process = frame.GetThread().GetProcess()
        target = process.GetTarget()
        local = _is_local(target, True)
        _core.record_name(_reader(target, process), _auxv(target, process, True, local), _executable(target), process.GetProcessID(), local,
                          "", _debug_dirs(target.GetDebugger()))
    except Exception:
        pass
    return False


def _remove_breakpoints():
    target = _recorder["target"]
    if target is not None and target.IsValid():
        for number in _recorder["breakpoints"]:
            target.BreakpointDelete(number)
    _recorder["breakpoints"] = []
    _recorder["probes"] = []


def _set_probes(target, probes, frames):
    _recorder["target"] = target
    _recorder["probes"] = probes
    _recorder["frames"] = frames
    module = _entry["module"]
    for index, probe in enumerate(probes):
        breakpoint = target.BreakpointCreateByAddress(probe[0])
        extra = lldb.SBStructuredData()
        extra.SetFromJSON('{"index": %d}' % index)
        breakpoint.SetScriptCallbackFunction(module + ".probe_hit", extra)
        breakpoint.SetAutoContinue(True)
        _recorder["breakpoints"].append(breakpoint.GetID())
    exit_hook = target.BreakpointCreateByName("_exit")
    exit_hook.SetScriptCallbackFunction(module + ".exit_hit")
    exit_hook.SetAutoContinue(True)
    _recorder["breakpoints"].append(exit_hook.GetID())


def _say(debugger, text):
    """What the armed hook says, outside any command: on lldb's own output."""
    try:
        out = debugger.GetOutputFile()
        out.Write(text.encode())
        out.Flush()
    except Exception:
        sys.stdout.write(text)


def armed_hit(frame, bp_loc, extra_args, internal_dict):
    """The armed hook: CPython is about to make a thread state; once it is among the modules, the
    breakpoints are set as `on` sets them (before that one is returned) and the hook is disabled."""
    if _recorder["armed"] is None:
        return False
    process = frame.GetThread().GetProcess()
    target = process.GetTarget()
    try:
        local = _is_local(target, True)
        status, text, error, probes, frames = _core.record_on(_recorder["armed"], _reader(target, process), [],
                                                              _auxv(target, process, True, local), _executable(target),
                                                              process.GetProcessID(), local, "", _debug_dirs(target.GetDebugger()))
        if status == 1:
            return False  # a module that defines the name but is no CPython
        _recorder["armed"] = None
        bp_loc.GetBreakpoint().SetEnabled(False)
        if status != 0:
            _say(target.GetDebugger(), "py-tstates-record: %s\n" % error)
            return False
        _set_probes(target, probes, frames)
        _say(target.GetDebugger(), text)
    except Exception as e:  # never a traceback in the middle of lldb's stop
        _recorder["armed"] = None
        _say(target.GetDebugger(), "py-tstates-record: %s\n" % e)
    return False


def _arm(debugger, target, args):
    """The hook in target (lldb's dummy target when none is selected: copied into each new one).
    Through the command line for its -K false: lldb 19 may misplace a breakpoint after a prologue."""
    names = " ".join("-n " + name for name in _core.record_hooks().split())
    ignored = lldb.SBCommandReturnObject()  # ("no locations (pending)": not for the user)
    debugger.GetCommandInterpreter().HandleCommand("breakpoint set -K false -N %s%s %s" % (_ARMED_HOOK, "" if target.IsValid() else " -D", names),
                                                   ignored)
    where = target if target.IsValid() else debugger.GetDummyTarget()
    hooks = lldb.SBBreakpointList(where)
    if where.FindBreakpointsByName(_ARMED_HOOK, hooks):
        for i in range(hooks.GetSize()):
            hook = hooks.GetBreakpointAtIndex(i)
            hook.SetScriptCallbackFunction(_entry["module"] + ".armed_hit")
            hook.SetAutoContinue(True)
    _recorder["armed"] = list(args)


def _disarm(debugger):
    """Disarms, and removes the hooks wherever they were copied."""
    _recorder["armed"] = None
    targets = [debugger.GetDummyTarget()] + [debugger.GetTargetAtIndex(i) for i in range(debugger.GetNumTargets())]
    for target in targets:
        if not target.IsValid():
            continue
        hooks = lldb.SBBreakpointList(target)
        if target.FindBreakpointsByName(_ARMED_HOOK, hooks):
            for number in [hooks.GetBreakpointAtIndex(i).GetID() for i in range(hooks.GetSize())]:
                target.BreakpointDelete(number)


def _record(debugger, args, exe_ctx):
    if not args:
        return _core.record_status(_recorder["armed"] is not None, len(_recorder["probes"]))
    if args[0] not in ("on", "off", "show", "save"):
        raise _Failure("expected on, off, show [N] or save FILE")
    what, rest = args[0], args[1:]
    target, process = _selected(debugger, exe_ctx)
    core = process.IsValid() and "core" in (process.GetPluginName() or "").lower()
    live = process.IsValid() and process.GetNumThreads() > 0 and _is_live(process)
    local = _is_local(target, live)
    if what == "on":
        if core:
            raise _Failure("no running process: a core cannot be recorded (run the program under lldb: py-tstates-record on, run)")
        _remove_breakpoints()
        _disarm(debugger)
        if live:
            threads, _numbers, _crash = _threads(target, process, True, local)
            status, text, error, probes, frames = _core.record_on(rest, _reader(target, process), threads,
                                                                  _auxv(target, process, True, local), _executable(target),
                                                                  process.GetProcessID(), local, "", _debug_dirs(debugger))
        else:  # no process yet: the options checked, the recording armed for the next run
            status, text, error, probes, frames = _core.record_on(rest, None, [], {}, "", 0, False, "", [])
        if status == 1:
            _arm(debugger, target, rest)
        elif status != 0:
            raise _Failure(error)
        else:
            _set_probes(target, probes, frames)
        return text
    if what == "off":
        if _recorder["armed"] is not None:
            _disarm(debugger)
            return "recording disarmed\n"
        _remove_breakpoints()
        _disarm(debugger)
        hits, recorded, kept, dropped = _core.record_stats()
        return "recording stopped: %d breakpoint hits, %d events recorded, %d kept, %d dropped\n" % (hits, recorded, kept, dropped)
    if what == "save" and len(rest) != 1:
        raise _Failure("save needs one FILE")
    if what == "show" and len(rest) > 1:
        raise _Failure("show takes at most one number")
    argument = rest[0] if rest else ""
    if what == "save":
        argument = os.path.abspath(os.path.expanduser(argument))
    if live:
        threads, _numbers, _crash = _threads(target, process, True, local)
        auxv = _auxv(target, process, True, local)
    else:
        threads, auxv = [], {}
    status, text, error = _core.record_output(what, argument, _reader(target, process), threads, auxv, _executable(target),
                                              process.GetProcessID() if process.IsValid() else 0, live, local, "", _debug_dirs(debugger))
    if status != 0:
        raise _Failure(error)
    return text


def py_tstates_record(debugger, command, exe_ctx, result, internal_dict):
    _guarded("py-tstates-record", _record, debugger, command, exe_ctx, result)


_COMMANDS = (("py-tstates", "py_tstates", "tstates"), ("pybind-internals", "pybind_internals", "internals"),
             ("py-tstates-check", "py_tstates_check", "check"), ("py-tstates-record", "py_tstates_record", None))


def register(debugger, entry_module):
    """Adds the commands (their help from the library); entry_module: the name lldb imported the
    module by that holds ENTRY_POINTS."""
    _entry["module"] = entry_module
    for name, function, command in _COMMANDS:
        if _core is None:
            help_text = "pytstates cannot run in lldb's Python: %s" % _core_error
        else:
            help_text = _core.help(command) if command else _core.record_help()
        first = help_text.strip().splitlines()[0] if help_text.strip() else name
        debugger.HandleCommand("command script add -o -f %s.%s -h %s %s" % (entry_module, function, _quote(first), name))
    _nav.register(debugger, entry_module)


def _quote(text):
    return "'" + text.replace("'", "") + "'"
