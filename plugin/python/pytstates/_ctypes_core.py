# SPDX-License-Identifier: Apache-2.0
"""libpytstates.so.0 through ctypes: the functions of the pybind11 module _pytstates_core, with the
same arguments and results, for a Python no _pytstates_core was built for (core.py picks).

The library is found relative to this package: lib/pytstates/python/pytstates/ -> lib/pytstates/.
Python >= 3.6: no newer syntax here (Debian 11's gdb embeds 3.9, older distributions older).
"""
import ctypes
import json
import os
import sys

NO_SIGINFO = -(2 ** 31)
SYSCALL_UNKNOWN = -2
built_for = sys.version.split()[0]
binding = "ctypes"

_LIBRARY = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "libpytstates.so.0"))

_READ = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)


class _Thread(ctypes.Structure):
    _fields_ = [("lwp", ctypes.c_int32), ("debugger_number", ctypes.c_int32), ("thread_pointer", ctypes.c_uint64),
                ("registers", ctypes.POINTER(ctypes.c_uint64)), ("register_count", ctypes.c_uint32), ("syscall", ctypes.c_int64)]


class _Signal(ctypes.Structure):
    _fields_ = [("lwp", ctypes.c_int32), ("signo", ctypes.c_int32), ("code", ctypes.c_int32), ("address", ctypes.c_uint64),
                ("sender_pid", ctypes.c_int32), ("sender_uid", ctypes.c_int32)]


class _Target(ctypes.Structure):
    _fields_ = [("context", ctypes.c_void_p), ("read_memory", _READ),
                ("threads", ctypes.POINTER(_Thread)), ("thread_count", ctypes.c_size_t),
                ("auxv", ctypes.POINTER(ctypes.c_uint64)), ("auxv_count", ctypes.c_size_t),
                ("executable", ctypes.c_char_p), ("pid", ctypes.c_int32), ("live", ctypes.c_int32), ("local", ctypes.c_int32),
                ("sysroot", ctypes.c_char_p), ("debug_dirs", ctypes.POINTER(ctypes.c_char_p)), ("debug_dir_count", ctypes.c_size_t),
                ("crash", ctypes.POINTER(_Signal))]


_lib = ctypes.CDLL(_LIBRARY)  # OSError when missing: core.py says so in one line
_OUT = ctypes.POINTER(ctypes.c_void_p)
_lib.pytstates_run.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.POINTER(_Target), _OUT, _OUT]
_lib.pytstates_run.restype = ctypes.c_int
_lib.pytstates_version.restype = ctypes.c_char_p
_lib.pytstates_help.argtypes = [ctypes.c_char_p]
_lib.pytstates_help.restype = ctypes.c_void_p
_lib.pytstates_register_names.argtypes = [ctypes.c_char_p]
_lib.pytstates_register_names.restype = ctypes.c_char_p
_lib.pytstates_thread_pointer_register.argtypes = [ctypes.c_char_p]
_lib.pytstates_thread_pointer_register.restype = ctypes.c_char_p
_lib.pytstates_syscall_register.argtypes = [ctypes.c_char_p]
_lib.pytstates_syscall_register.restype = ctypes.c_char_p
_READ_REGISTER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64))
_NEXT_PC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64))


class _HitReaders(ctypes.Structure):
    _fields_ = [("context", ctypes.c_void_p), ("read_register", _READ_REGISTER), ("read_memory", _READ), ("next_pc", _NEXT_PC)]


_lib.pytstates_record_hit_from.argtypes = [ctypes.c_size_t, ctypes.c_int32, ctypes.POINTER(_HitReaders)]
_lib.pytstates_record_hit_from.restype = ctypes.c_int
_lib.pytstates_record_on.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.POINTER(_Target), _OUT, _OUT,
                                     ctypes.POINTER(ctypes.c_int), _OUT]
_lib.pytstates_record_on.restype = ctypes.c_int
_lib.pytstates_record_hit.argtypes = [ctypes.c_size_t, ctypes.c_uint64, ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(ctypes.c_uint64),
                                      ctypes.c_size_t]
_lib.pytstates_record_hit.restype = None
_lib.pytstates_record_output.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_Target), _OUT, _OUT]
_lib.pytstates_record_output.restype = ctypes.c_int
_lib.pytstates_record_stats.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
_lib.pytstates_record_stats.restype = None
_lib.pytstates_record_name.argtypes = [ctypes.POINTER(_Target)]
_lib.pytstates_record_name.restype = None
_lib.pytstates_record_help.restype = ctypes.c_void_p
_lib.pytstates_record_status.argtypes = [ctypes.c_int32, ctypes.c_size_t]
_lib.pytstates_record_status.restype = ctypes.c_void_p
_lib.pytstates_record_hooks.restype = ctypes.c_char_p
_lib.pytstates_view_open.argtypes = [ctypes.POINTER(_Target), ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_void_p), _OUT]
_lib.pytstates_view_open.restype = ctypes.c_int
_lib.pytstates_view_ask.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _OUT, _OUT]
_lib.pytstates_view_ask.restype = ctypes.c_int
_lib.pytstates_view_close.argtypes = [ctypes.c_void_p]
_lib.pytstates_view_close.restype = None
_lib.pytstates_free.argtypes = [ctypes.c_void_p]
_lib.pytstates_free.restype = None

_MASK = 0xFFFFFFFFFFFFFFFF


def _text(pointer):
    """A string the library malloc'ed, freed here."""
    if not pointer:
        return ""
    try:
        return ctypes.string_at(pointer).decode("utf-8", "replace")
    finally:
        _lib.pytstates_free(pointer)


def _bytes(text):
    return (text or "").encode("utf-8", "surrogateescape")


def _strings(values):
    values = [_bytes(v) for v in values]
    return (ctypes.c_char_p * max(len(values), 1))(*values), len(values)


def _memory_reader(read_memory):
    def read(_context, address, buffer, length):
        try:
            got = read_memory(address, length)
            if not got:
                return 0
            n = min(len(got), length)
            ctypes.memmove(buffer, bytes(got[:n]), n)
            return n
        except Exception:  # an unreadable range, never an exception through the library
            return 0
    return _READ(read)


class _TargetBuilder(object):
    """A pytstates_target and everything its pointers point into (kept alive with it)."""

    def __init__(self, read_memory, threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debug_dirs):
        self._read = _memory_reader(read_memory)
        rows = list(threads)
        self._threads = (_Thread * max(len(rows), 1))()
        self._registers = []
        for i, row in enumerate(rows):
            registers = [int(r) & _MASK for r in row[2]]
            array = (ctypes.c_uint64 * max(len(registers), 1))(*registers)
            self._registers.append(array)
            t = self._threads[i]
            t.lwp = int(row[0])
            t.debugger_number = int((numbers or {}).get(int(row[0]), 0))
            t.thread_pointer = int(row[1]) & _MASK
            t.registers = ctypes.cast(array, ctypes.POINTER(ctypes.c_uint64))
            t.register_count = len(registers)
            t.syscall = int(row[3]) if len(row) > 3 and row[3] is not None else -1
        pairs = []
        for key, value in sorted((auxv or {}).items()):
            pairs += [int(key) & _MASK, int(value) & _MASK]
        self._auxv = (ctypes.c_uint64 * max(len(pairs), 1))(*pairs)
        self._dirs, dir_count = _strings(debug_dirs or [])
        self._executable = _bytes(executable)
        self._sysroot = _bytes(sysroot)
        self._crash = None
        target = _Target()
        target.context = None
        target.read_memory = self._read
        target.threads = ctypes.cast(self._threads, ctypes.POINTER(_Thread))
        target.thread_count = len(rows)
        target.auxv = ctypes.cast(self._auxv, ctypes.POINTER(ctypes.c_uint64))
        target.auxv_count = len(pairs) // 2
        target.executable = self._executable
        target.pid = int(pid or 0)
        target.live = 1 if live else 0
        target.local = 1 if local else 0
        target.sysroot = self._sysroot
        target.debug_dirs = ctypes.cast(self._dirs, ctypes.POINTER(ctypes.c_char_p))
        target.debug_dir_count = dir_count
        if siginfo is not None:
            lwp, signo, code, address, sender_pid, sender_uid = siginfo
            self._crash = _Signal(int(lwp), int(signo), int(code), int(address) & _MASK, int(sender_pid), int(sender_uid))
            target.crash = ctypes.pointer(self._crash)
        self.target = target
        self.thread_count = len(rows)


def run(command, args, read_memory, threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debug_dirs, machine=""):
    """tstates | internals | check on what the debugger has open: (status, output, error). machine:
    not needed (the library tells it from the registers and the executable)."""
    built = _TargetBuilder(read_memory, threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debug_dirs)
    argv, argc = _strings(args)
    output, error = ctypes.c_void_p(), ctypes.c_void_p()
    status = _lib.pytstates_run(_bytes(command), argv, argc, ctypes.byref(built.target), ctypes.byref(output), ctypes.byref(error))
    return status, _text(output.value), _text(error.value)


def help(command):  # noqa: A001 (the pybind11 module's name)
    return _text(_lib.pytstates_help(_bytes(command)))


def record_on(args, read_memory, threads, auxv, executable, pid, local, sysroot, debug_dirs, machine=""):
    """Plans the lifecycle breakpoints: (status, text, error, probes, frames); status 1 (armed) when
    read_memory is None (no process yet) or the process holds no CPython yet."""
    built = None if read_memory is None else _TargetBuilder(read_memory, threads, auxv, executable, pid, True, local, {}, sysroot, None,
                                                             debug_dirs)
    argv, argc = _strings(args)
    text, probes, error = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    frames = ctypes.c_int(0)
    target = None if built is None else ctypes.byref(built.target)  # None: no process yet (armed, status 1)
    status = _lib.pytstates_record_on(argv, argc, target, ctypes.byref(text), ctypes.byref(probes), ctypes.byref(frames), ctypes.byref(error))
    rows = []
    probes_text = _text(probes.value)
    if status == 0 and probes_text:
        for p in json.loads(probes_text):
            rows.append((p["address"], p["event"], p["tstate_register"], p["key_register"], p["key_offset"]))
    return status, _text(text.value), _text(error.value), rows, frames.value


def record_hit(probe, tstate, lwp, key, pcs):
    pcs = [int(pc) & _MASK for pc in pcs]
    array = (ctypes.c_uint64 * max(len(pcs), 1))(*pcs)
    _lib.pytstates_record_hit(probe, tstate & _MASK, lwp, key, array, len(pcs))


def record_output(what, argument, read_memory, threads, auxv, executable, pid, live, local, sysroot, debug_dirs, machine=""):
    """show [N] | save FILE: (status, text, error)."""
    built = _TargetBuilder(read_memory, threads, auxv, executable, pid, live, local, {}, sysroot, None, debug_dirs)
    output, error = ctypes.c_void_p(), ctypes.c_void_p()
    target = ctypes.byref(built.target) if built.thread_count else None
    status = _lib.pytstates_record_output(_bytes(what), _bytes(argument), target, ctypes.byref(output), ctypes.byref(error))
    return status, _text(output.value), _text(error.value)


def record_hit_from(probe, read_register, read_memory, lwp, pcs):
    """One breakpoint hit read through callbacks (what it keeps is decided by the library)."""
    frames = iter(pcs)

    def register(_context, name, value):
        try:
            value[0] = int(read_register(name.decode())) & _MASK
            return 1
        except Exception:
            return 0

    def next_pc(_context, pc):
        try:
            pc[0] = int(next(frames)) & _MASK
            return 1
        except Exception:  # StopIteration, or a frame the debugger cannot unwind
            return 0

    readers = _HitReaders(None, _READ_REGISTER(register), _memory_reader(read_memory), _NEXT_PC(next_pc))
    return _lib.pytstates_record_hit_from(probe, lwp, ctypes.byref(readers)) != 0


def syscall_register(machine):
    return (_lib.pytstates_syscall_register(_bytes(machine)) or b"").decode()


def record_stats():
    out = (ctypes.c_uint64 * 4)()
    _lib.pytstates_record_stats(out)
    return tuple(out)


def record_status(armed, breakpoints):
    return _text(_lib.pytstates_record_status(1 if armed else 0, breakpoints))


def record_hooks():
    return (_lib.pytstates_record_hooks() or b"").decode()


def record_name(read_memory, auxv, executable, pid, local, sysroot, debug_dirs, machine=""):
    built = _TargetBuilder(read_memory, [], auxv, executable, pid, True, local, {}, sysroot, None, debug_dirs)
    _lib.pytstates_record_name(ctypes.byref(built.target))


def record_help():
    return _text(_lib.pytstates_record_help())


def register_names(machine):
    return (_lib.pytstates_register_names(_bytes(machine)) or b"").decode().split()


def thread_pointer_register(machine):
    return (_lib.pytstates_thread_pointer_register(_bytes(machine)) or b"").decode()


def version():
    return (_lib.pytstates_version() or b"").decode("utf-8", "replace")


class View(object):
    """One stop of the debugger's target, analysed once (pytstates_view): ask(question JSON text)
    -> (status, answer JSON text, error). The target (its read_memory above all) lives as long as
    the view: memory is read when a question needs it."""

    def __init__(self, built, handle):
        self._built = built
        self._handle = handle

    def ask(self, question):
        if not self._handle:
            return 2, "", "the view is closed"
        answer, error = ctypes.c_void_p(), ctypes.c_void_p()
        status = _lib.pytstates_view_ask(self._handle, _bytes(question), ctypes.byref(answer), ctypes.byref(error))
        return status, _text(answer.value), _text(error.value)

    def close(self):
        if self._handle:
            _lib.pytstates_view_close(self._handle)
        self._handle = None
        self._built = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def view_open(args, read_memory, threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debug_dirs, machine=""):
    """Analyses the debugger's stop once: (View or None, error)."""
    built = _TargetBuilder(read_memory, threads, auxv, executable, pid, live, local, numbers, sysroot, siginfo, debug_dirs)
    argv, argc = _strings(args)
    handle, error = ctypes.c_void_p(), ctypes.c_void_p()
    status = _lib.pytstates_view_open(ctypes.byref(built.target), argv, argc, ctypes.byref(handle), ctypes.byref(error))
    if status != 0 or not handle.value:
        return None, _text(error.value)
    return View(built, handle.value), ""
