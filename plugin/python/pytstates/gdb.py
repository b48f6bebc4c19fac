# SPDX-License-Identifier: Apache-2.0
"""gdb commands py-tstates, pybind-internals, py-tstates-check over the pytstates C++ core.

Memory, threads (with each thread's registers and thread pointer, named per machine by the core's
register_names and thread_pointer_register) and the auxiliary vector come from gdb, so the
commands work on whatever gdb debugs: a core, a process it started or attached to, a gdbserver,
qemu's gdb stub; x86_64 and aarch64 (gdb-multiarch).
Errors are one line (gdb.GdbError), never a traceback; the selected thread and frame are restored.
"""
import sys

import gdb

from .core import core as _core, error as _core_error

_IMPORT_ERROR = "pytstates cannot run in gdb's Python %s: %s" % (sys.version.split()[0], _core_error)

_AUX_TYPES = {"AT_PHDR": 3, "AT_PHNUM": 5, "AT_ENTRY": 9, "AT_SYSINFO_EHDR": 33}


def _read_memory(addr, length):
    try:
        return bytes(gdb.selected_inferior().read_memory(addr, length))
    except (gdb.MemoryError, gdb.error, OverflowError, ValueError):
        return None


def _auxv():
    values = {}
    try:
        text = gdb.execute("info auxv", to_string=True)
    except gdb.error:
        return values
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in _AUX_TYPES:
            try:
                values[_AUX_TYPES[parts[1]]] = int(parts[-1], 0)
            except ValueError:
                pass
    return values


def _is_local(inferior):
    """A process gdb debugs natively (not through gdbserver): its /proc is ours to read."""
    connection = getattr(inferior, "connection", None)
    return connection is not None and getattr(connection, "type", None) == "native"


def _is_live(inferior):
    connection = getattr(inferior, "connection", None)
    if connection is not None and getattr(connection, "type", None):
        return connection.type != "core"
    return "core dump" not in gdb.execute("info target", to_string=True)


def _machine():
    """The machine gdb debugs, as gdb names it ("i386:x86-64", "aarch64"): the inferior's, not this
    one's (gdb-multiarch on an arm64 core). The core resolves the name; "" when gdb cannot say."""
    try:
        return gdb.newest_frame().architecture().name()
    except (gdb.error, AttributeError, RuntimeError):
        pass
    try:  # no frame: 'The target architecture is set to "auto" (currently "aarch64").'
        text = gdb.execute("show architecture", to_string=True)
    except gdb.error:
        return ""
    words = [w for w in text.replace("(", " ").replace(")", " ").replace(".", " ").split() if w.startswith('"')]
    return words[-1].strip('"') if words else ""


class _Names(object):
    """The registers pytstates reads of a machine, by the names the core gives them."""

    def __init__(self, machine):
        self.machine = machine
        self.dwarf = tuple(_core.register_names(machine))
        self.thread_pointer = _core.thread_pointer_register(machine)
        self.syscall = _core.syscall_register(machine)


def _registers(names):
    """The selected thread's innermost-frame registers in DWARF order, then the system call the
    thread is in (orig_rax; -1 outside one) when the machine keeps it apart and gdb has it; []
    when gdb has none."""
    try:
        frame = gdb.newest_frame()
        regs = [int(frame.read_register(name)) & 0xFFFFFFFFFFFFFFFF for name in names.dwarf]
    except (gdb.error, ValueError):
        return []
    if names.syscall:
        try:
            regs.append(int(frame.read_register(names.syscall)) & 0xFFFFFFFFFFFFFFFF)
        except (gdb.error, ValueError):
            pass
    return regs


def _thread_pointer(names):
    """$fs_base, $tpidr; 0 when gdb has none (qemu's arm64 cores, with no NT_ARM_TLS: void)."""
    if not names.thread_pointer:
        return 0
    try:
        return int(gdb.parse_and_eval("$" + names.thread_pointer)) & 0xFFFFFFFFFFFFFFFF
    except (gdb.error, ValueError, TypeError):
        return 0


# SIGQUIT SIGILL SIGABRT SIGBUS SIGFPE SIGSEGV SIGXCPU SIGXFSZ SIGSYS: the signals that end a process
# with a core (SIGTRAP too, but under a debugger that is a breakpoint).
_FATAL_SIGNALS = (3, 4, 6, 7, 8, 11, 24, 25, 31)


def _siginfo(thread):
    """(lwp, si_signo, si_code, si_addr, si_pid, si_uid) of a core's thread from $_siginfo, or None."""
    try:
        info = gdb.parse_and_eval("$_siginfo")
        signo = int(info["si_signo"])
        code = int(info["si_code"])
        fields = info["_sifields"]
        addr = int(fields["_sigfault"]["si_addr"]) & 0xFFFFFFFFFFFFFFFF
        pid = int(fields["_kill"]["si_pid"])
        uid = int(fields["_kill"]["si_uid"])
    except (gdb.error, RuntimeError, ValueError):
        return None
    return (thread.ptid[1] or thread.ptid[0], signo, code, addr, pid, uid)


def _threads(inferior, live, names):
    """(lwp, thread pointer, registers) of every thread, gdb's thread number of each LWP, and a
    core's fatal signal (the first thread's $_siginfo). Restores the selection."""
    selected = gdb.selected_thread()
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        frame = None
    threads, numbers, siginfo = [], {}, None
    try:
        for thread in sorted(inferior.threads(), key=lambda t: t.num):
            lwp = thread.ptid[1] or thread.ptid[0]
            numbers[lwp] = thread.num
            thread.switch()
            threads.append((lwp, _thread_pointer(names), _registers(names)))
            if not live and siginfo is None:
                siginfo = _siginfo(thread)  # a core's first thread is the one that took the signal
            elif live and siginfo is None:
                # A live process: the thread whose last stop was a fatal signal (not a breakpoint's
                # SIGTRAP, not the SIGSTOP that stops the others), as gdb reports it.
                info = _siginfo(thread)
                if info is not None and info[1] in _FATAL_SIGNALS:
                    siginfo = info
    finally:
        if selected is not None and selected.is_valid():
            selected.switch()
            if frame is not None and frame.is_valid():
                frame.select()
    return threads, numbers, siginfo


def _sysroot():
    try:
        value = gdb.parameter("sysroot") or ""
    except gdb.error:
        return ""
    return "" if value.startswith("target:") else value


def _debug_dirs():
    """gdb's debug-file-directory (colon-separated): where the user keeps separate debug files,
    searched by build-id as gdb does (a python3.X-dbg unpacked outside /usr/lib/debug)."""
    try:
        value = gdb.parameter("debug-file-directory") or ""
    except gdb.error:
        return []
    return [d for d in value.split(":") if d]


class _PyTstatesCommand(gdb.Command):
    def __init__(self, name, command):
        self._name = name
        self._command = command
        if _core is not None:
            self.__doc__ = _core.help(command)
        super().__init__(name, gdb.COMMAND_DATA)

    def invoke(self, argument, from_tty):
        try:
            status, output, error = self._run(argument)
        except gdb.GdbError:
            raise
        except Exception as e:  # never a traceback into the user's session
            raise gdb.GdbError("%s: %s" % (self._name, e))
        if status == 2:
            raise gdb.GdbError("%s: %s" % (self._name, error))
        gdb.write(output)

    def _run(self, argument):
        if _core is None:
            raise gdb.GdbError("%s: %s" % (self._name, _IMPORT_ERROR))
        inferior = gdb.selected_inferior()
        if inferior is None or not inferior.threads():
            raise gdb.GdbError("%s: no process or core: run, attach to a process or load a core first" % self._name)
        live = _is_live(inferior)
        names = _Names(_machine())
        threads, numbers, siginfo = _threads(inferior, live, names)
        executable = inferior.progspace.filename if inferior.progspace else ""
        width = gdb.parameter("width") or 0  # gdb's own columns (None: unlimited, as in batch mode); a --width typed wins
        return _core.run(self._command, ["--width", str(width)] + gdb.string_to_argv(argument), _read_memory, threads, _auxv(),
                         executable or "", int(inferior.pid or 0), live, live and _is_local(inferior), numbers, _sysroot(), siginfo,
                         _debug_dirs(), names.machine)


def _target_args(inferior):
    """What record_on / record_output take about the process gdb has open."""
    live = _is_live(inferior)
    names = _Names(_machine())
    threads, _, _ = _threads(inferior, live, names)
    executable = inferior.progspace.filename if inferior.progspace else ""
    return (threads, _auxv(), executable or "", int(inferior.pid or 0), live, live and _is_local(inferior), _sysroot(), _debug_dirs(),
            names.machine)


def _pcs(frame):
    """The pcs of frame and the frames it was called from, unwound only as far as the core asks."""
    while frame is not None:
        yield frame.pc()
        frame = frame.older()


class _Probe(gdb.Breakpoint):
    """One lifecycle breakpoint: stop() lets the core read the hit through gdb (which registers,
    the TLS key, how many frames: core.record_hit_from decides) and lets the program run on."""

    def __init__(self, address, index):
        super().__init__("*0x%x" % address, type=gdb.BP_BREAKPOINT, internal=True)
        self.silent = True
        self._index = index

    def stop(self):
        try:
            frame = gdb.newest_frame()
            thread = gdb.selected_thread()
            _core.record_hit_from(self._index, lambda name: int(frame.read_register(name)), _read_memory,
                                  thread.ptid[1] or thread.ptid[0], _pcs(frame))
        except (gdb.error, gdb.MemoryError, ValueError, OverflowError):
            pass  # a hit that cannot be read is not recorded; the program runs on either way
        return False


class _ExitHook(gdb.Breakpoint):
    """At _exit the modules are still mapped: name the recorded frames before they go."""

    def __init__(self):
        super().__init__("_exit", type=gdb.BP_BREAKPOINT, internal=True)
        self.silent = True

    def stop(self):
        try:
            inferior = gdb.selected_inferior()
            executable = inferior.progspace.filename if inferior.progspace else ""
            _core.record_name(_read_memory, _auxv(), executable or "", int(inferior.pid or 0), _is_local(inferior), _sysroot(),
                              _debug_dirs(), _machine())
        except (gdb.error, ValueError):
            pass
        return False


class _RecordCommand(gdb.Command):
    """py-tstates-record [on|off|show [N]|save FILE]"""

    def __init__(self):
        if _core is not None:
            self.__doc__ = _core.record_help()
        super().__init__("py-tstates-record", gdb.COMMAND_RUNNING)
        self._probes = []
        self._probe_count = 0
        # The options of an `on` typed before the program ran (or before it loaded CPython): the
        # breakpoints are planned and set from the first new objfile that finds CPython loaded.
        self._armed = None
        self._armed_pid = 0  # the process whose first module was planned in (see _may_hold_cpython)
        gdb.events.new_objfile.connect(self._on_new_objfile)

    def invoke(self, argument, from_tty):
        try:
            self._invoke(gdb.string_to_argv(argument))
        except gdb.GdbError:
            raise
        except Exception as e:  # never a traceback into the user's session
            raise gdb.GdbError("py-tstates-record: %s" % e)

    def _fail(self, why):
        raise gdb.GdbError("py-tstates-record: %s" % why)

    def _invoke(self, args):
        if _core is None:
            self._fail(_IMPORT_ERROR)
        if not args:
            gdb.write(_core.record_status(self._armed is not None, self._probe_count))
            return
        if args[0] not in ("on", "off", "show", "save"):
            self._fail("expected on, off, show [N] or save FILE")
        what, rest = args[0], args[1:]
        inferior = gdb.selected_inferior()
        if what == "on":
            if inferior is not None and inferior.threads() and not _is_live(inferior):
                self._fail("no running process: a core cannot be recorded (run the program under gdb: py-tstates-record on, run)")
            self._remove()
            self._armed = None
            if inferior is None or not inferior.threads():  # no process yet: armed for the next run
                status, text, error, _, _ = _core.record_on(rest, None, [], {}, "", 0, False, "", [], "")
            else:
                threads, auxv, executable, pid, _, local, sysroot, debug_dirs, machine = _target_args(inferior)
                status, text, error, probes, _frames = _core.record_on(rest, _read_memory, threads, auxv, executable, pid, local, sysroot,
                                                                       debug_dirs, machine)
            if status == 1:  # armed: no process, or no CPython in it yet
                self._armed = list(rest)
            elif status != 0:
                self._fail(error)
            else:
                self._set(probes)
            gdb.write(text)
        elif what == "off":
            if self._armed is not None:
                self._armed = None
                gdb.write("recording disarmed\n")
                return
            self._remove()
            hits, recorded, kept, dropped = _core.record_stats()
            gdb.write("recording stopped: %d breakpoint hits, %d events recorded, %d kept, %d dropped\n" % (hits, recorded, kept, dropped))
        else:
            if what == "save" and len(rest) != 1:
                self._fail("save needs one FILE")
            if what == "show" and len(rest) > 1:
                self._fail("show takes at most one number")
            argument = rest[0] if rest else ""
            if what == "save":
                import os
                argument = os.path.abspath(os.path.expanduser(argument))
            if inferior is not None and inferior.threads():
                threads, auxv, executable, pid, live, local, sysroot, debug_dirs, machine = _target_args(inferior)
            else:  # the process is gone: the events are shown with the names they already have
                threads, auxv, executable, pid, live, local, sysroot, debug_dirs, machine = [], {}, "", 0, False, False, "", [], ""
            status, text, error = _core.record_output(what, argument, _read_memory, threads, auxv, executable, pid, live, local, sysroot,
                                                      debug_dirs, machine)
            if status != 0:
                self._fail(error)
            gdb.write(text)

    def _set(self, probes):
        for index, probe in enumerate(probes):
            self._probes.append(_Probe(probe[0], index))
        self._probe_count = len(probes)
        try:
            self._probes.append(_ExitHook())
        except gdb.error:  # no _exit yet: the frames are named at show, save or check instead
            pass

    def _on_new_objfile(self, event):
        """Armed: each module the process loads (the executable and its libraries at start, a
        dlopen later) may bring CPython; once it has, the breakpoints are set as `on` sets them.
        No thread is switched to here (gdb is in the middle of a stop): the plan needs none."""
        if self._armed is None:
            return
        try:
            if getattr(event.new_objfile, "owner", None) is not None:
                return  # a separate debug file: the module it describes was seen already
            inferior = gdb.selected_inferior()
            if inferior is None or not inferior.pid or not _is_live(inferior):
                return  # `file`, a core: no process to plan in
            if not self._may_hold_cpython(inferior):
                return
            executable = inferior.progspace.filename if inferior.progspace else ""
            status, text, error, probes, _frames = _core.record_on(self._armed, _read_memory, [], _auxv(), executable or "", int(inferior.pid),
                                                                   _is_local(inferior), _sysroot(), _debug_dirs(), _machine())
            if status == 1:
                return  # no CPython yet: the next module may bring it
            self._armed = None
            if status != 0:
                gdb.write("py-tstates-record: %s\n" % error)
                return
            self._set(probes)
            gdb.write(text)
        except Exception as e:  # never a traceback in the middle of gdb's stop
            self._armed = None
            gdb.write("py-tstates-record: %s\n" % e)

    def _may_hold_cpython(self, inferior):
        """Planning reads every module of the process: doing it for each of the hundreds of
        libraries a host may load before libpython (torch) costs their square. It is done for the
        run's first module (the executable may be CPython, static and stripped), then only once
        gdb's symbols, minimal ones included, know _PyRuntime."""
        if self._armed_pid != inferior.pid:
            self._armed_pid = inferior.pid
            return True
        try:
            gdb.parse_and_eval("&_PyRuntime")
            return True
        except gdb.error:
            return False

    def _remove(self):
        for probe in self._probes:
            if probe.is_valid():
                probe.delete()
        self._probes = []
        self._probe_count = 0


_PyTstatesCommand("py-tstates", "tstates")
_PyTstatesCommand("pybind-internals", "internals")
_PyTstatesCommand("py-tstates-check", "check")
_RecordCommand()

from . import gdb_nav  # noqa: E402,F401 (pyt: Python frames, navigation, pointers explained)
# gdb's own bt, print and info threads with Python in them; libpython.py's names (gdb_*.py, after pyt).
from . import gdb_frames, gdb_printers, gdb_threads, gdb_libpython  # noqa: E402,F401
