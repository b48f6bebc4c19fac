# SPDX-License-Identifier: Apache-2.0
"""What a PyThreadState *, PyInterpreterState * or PyObject * is, wherever gdb prints one (bt's
arguments, print, info locals), and the convenience functions $py_tstate() and $py_gil_holder().

    take_gil (tstate=0x7ffff0000b70 <stale: in no interpreter's list; pybind11 key 2 caches it on LWP 7084>)

The printers sit on the progspace: libpython.py's objfile printer, where Debian's python3.X-dbg
loads it, is asked first and keeps PyObject *. gdb asks every printer about every value it prints,
so the lookup is a type check; only a pointer of the three types asks the view (once per address
and stop). The pointer gdb would print is always there: an address the view cannot explain prints
as gdb prints it, with nothing beside it.
"""
import gdb

from . import gdb_stop
from .gdb_text import shown

# The pointee's name (typedef or struct tag) -> the view's question.
_KINDS = {"PyThreadState": "tstate", "_ts": "tstate", "PyInterpreterState": "interpreter", "_is": "interpreter",
          "PyObject": "object", "_object": "object"}
_MAX_SHOWN = 1024  # libpython.py's cap; the view bounds its reprs too


def _kind(value_type):
    t = value_type
    if t.code == gdb.TYPE_CODE_TYPEDEF:
        t = t.strip_typedefs()
    if t.code != gdb.TYPE_CODE_PTR:
        return None
    target = t.target()
    name = target.name or target.unqualified().name or target.tag
    return _KINDS.get(name) if name else None


def _worth_reading():
    """A core's one stop is read once, whatever asks. A live process's stop is not analysed for a
    printer alone: gdb prints the stop line's arguments at every `step` and `next`, and stepping
    through CPython must not pay an analysis per step; once bt, a pyt command or $py_tstate() has
    read the stop, the printers explain too."""
    if gdb_stop.stop_is_read():
        return True
    try:
        from .gdb import _is_live
        return not _is_live(gdb.selected_inferior())
    except Exception:
        return False


_lines = {}  # (stop, kind, address) -> the line: bt prints one pointer in several rows, every bt


def describe(kind, address):
    """The view's one line about a pointer of that kind, or None."""
    key = (gdb_stop.generation, kind, address)
    if key in _lines:
        return _lines[key]
    line = _describe(kind, address)
    if line is not None or gdb_stop.stop_is_read():  # unread (a live stop): asked again once it is read
        if len(_lines) > 4096 or next(iter(_lines), key)[0] != key[0]:
            _lines.clear()
        _lines[key] = line
    return line


def _describe(kind, address):
    if not address or not _worth_reading():
        return None
    try:
        answer = gdb_stop.ask({"ask": kind, "address": address})
    except gdb_stop.Unavailable:
        return None
    if kind == "object":
        type_name, text = answer.get("type"), answer.get("repr")
        if not isinstance(text, str):
            return None
        if isinstance(type_name, str) and not text.startswith("<"):
            text = "%s %s" % (type_name, text)
    else:
        text = answer.get("summary")
        if not isinstance(text, str) or not text:
            return None
    text = shown(text)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "...(truncated)"


class _PointerPrinter(object):
    def __init__(self, kind, value):
        self._kind = kind
        self._value = value

    def to_string(self):
        try:
            address = int(self._value) & 0xFFFFFFFFFFFFFFFF
        except (gdb.error, gdb.MemoryError, ValueError, OverflowError):
            return self._value.format_string(raw=True) if hasattr(self._value, "format_string") else "<unavailable>"
        try:
            line = describe(self._kind, address)
        except Exception:  # never a traceback in the middle of a bt
            line = None
        return "0x%x <%s>" % (address, line) if line else "0x%x" % address


def lookup(value):
    try:
        kind = _kind(value.type)
    except Exception:
        return None
    return _PointerPrinter(kind, value) if kind else None


class _Printers(object):
    """The progspace's printer, as `info pretty-printer` lists it (enable/disable pretty-printer)."""

    def __init__(self):
        self.name = "pytstates"
        self.enabled = True
        self.subprinters = None

    def __call__(self, value):
        return lookup(value) if self.enabled else None


_PRINTERS = _Printers()
_registered = set()


def _register(progspace):
    if progspace is None or id(progspace) in _registered:
        return
    if any(getattr(p, "name", None) == "pytstates" for p in progspace.pretty_printers):
        _registered.add(id(progspace))
        return
    progspace.pretty_printers.append(_PRINTERS)  # after libpython's objfile printers, which gdb asks first
    _registered.add(id(progspace))


def _on_new_objfile(event):
    try:
        objfile = event.new_objfile
        _register(objfile.progspace if objfile is not None else gdb.current_progspace())
    except Exception:
        pass


def _pointer_type(name):
    try:
        return gdb.lookup_type(name).pointer()
    except gdb.error:
        return None


def _as_pointer(address, type_name):
    """A typed pointer where the program's DWARF has the type (so print shows it explained), else
    the address as a number."""
    pointer = _pointer_type(type_name)
    if pointer is None:
        return address
    return gdb.Value(address).cast(pointer)


class _TstateFunction(gdb.Function):
    """$py_tstate(): the PyThreadState the selected thread runs (0 when it runs none).
$py_tstate(LWP): the one that thread runs."""

    def __init__(self):
        super().__init__("py_tstate")

    def invoke(self, *args):
        try:
            lwp = int(args[0]) if args else gdb_stop.selected_lwp()
            answer = gdb_stop.ask({"ask": "stack", "lwp": lwp})
            address = _address(answer.get("tstate"))
        except gdb_stop.Unavailable as e:
            raise gdb.GdbError("$py_tstate: %s" % e)
        except gdb.GdbError:
            raise
        except Exception as e:
            raise gdb.GdbError("$py_tstate: %s" % e)
        return _as_pointer(address, "PyThreadState")


class _GilHolderFunction(gdb.Function):
    """$py_gil_holder(): the PyThreadState that holds the main interpreter's GIL (0 when none does).
$py_gil_holder(ID): the holder of interpreter ID's GIL (3.12+: one GIL per interpreter)."""

    def __init__(self):
        super().__init__("py_gil_holder")

    def invoke(self, *args):
        try:
            wanted = int(args[0]) if args else None
            answer = gdb_stop.ask({"ask": "gil-holder"})
            rows = answer.get("interpreters") or answer.get("holders") or []
            row = _holder_row(rows, wanted)
            if row is None:
                raise gdb.GdbError("$py_gil_holder: %s" % ("no interpreter %d" % wanted if wanted is not None else "no interpreter"))
            address = _address(row.get("tstate") or row.get("holder"))
        except gdb_stop.Unavailable as e:
            raise gdb.GdbError("$py_gil_holder: %s" % e)
        except gdb.GdbError:
            raise
        except Exception as e:
            raise gdb.GdbError("$py_gil_holder: %s" % e)
        return _as_pointer(address, "PyThreadState")


def _holder_row(rows, wanted):
    for row in rows:
        if wanted is None and row.get("main", row.get("id") == 0):
            return row
        if wanted is not None and row.get("id") == wanted:
            return row
    return rows[0] if rows and wanted is None else None


def _address(value):
    """The view writes addresses as "0x..." strings (JSON numbers lose 64-bit precision)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    return int(str(value), 0)


_register(gdb.current_progspace())
gdb.events.new_objfile.connect(_on_new_objfile)
_TstateFunction()
_GilHolderFunction()
