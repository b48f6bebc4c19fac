# SPDX-License-Identifier: Apache-2.0
"""Beside CPython's libpython.py (Tools/gdb), which Debian's python3.X-dbg has gdb auto-load with
the interpreter or libpython3.X.so: its py-bt, py-bt-full, py-list, py-up, py-down, py-print,
py-locals and pytstates' `pyt ...` are different names, so both work in either order of loading.

Where no libpython.py is loaded (a stripped or non-Debian CPython, no -dbg package) a user who
types one of its names is told ours, and gets ours: a placeholder is defined for each name that
is free when pytstates loads. gdb loads libpython.py later than pytstates (at the program's,
the core's or the library's load) and then silently replaces the placeholders with the real
commands, which is right: the user asked for libpython's. A name that is taken when pytstates
loads (libpython.py came first) is left alone.
"""
import gdb

# libpython.py's command -> pytstates' command that answers the same question.
OURS = (("py-bt", "pyt bt"), ("py-bt-full", "pyt bt -full"), ("py-list", "pyt list"), ("py-up", "pyt up"),
        ("py-down", "pyt down"), ("py-print", "pyt print"), ("py-locals", "pyt locals"))

PLACEHOLDER_DOC = "libpython.py's %s is not loaded here: pytstates' `%s` answers instead."

WHICH_ANSWERS_WHAT = """\
libpython.py (CPython's gdb helpers; Debian's python3.X-dbg loads them) and pytstates side by side:
  libpython.py      pytstates           what
  py-bt             pyt bt              the Python stack of the selected thread
  py-bt-full        pyt bt -full        the same with each frame's locals
  py-up, py-down    pyt up, pyt down    select an older / newer Python frame
  py-list           pyt list            the source around the selected Python frame's line
  py-locals         pyt locals          the selected Python frame's locals
  py-print NAME     pyt print NAME      a local, global or builtin by name
libpython.py reads CPython's DWARF (python3.X-dbg) and only what it names; pytstates reads the
same memory with or without DWARF, on every CPython 3.8-3.15, and gdb's own `bt` (a frame filter
named pytstates: `bt -no-filters` or `disable frame-filter global pytstates` hides it) shows
each _PyEval_EvalFrameDefault's Python functions. PyThreadState *, PyInterpreterState * and
PyObject * print with what pytstates knows of them (libpython.py's printer keeps PyObject *
where it is loaded); $py_tstate() and $py_gil_holder() give thread states; `set pyt
thread-names off` gives info threads gdb's own names back.
Where libpython.py is not loaded, its names run pytstates' commands and say so; when it loads,
its own commands replace them."""


def defined(name):
    """gdb has a command of exactly this name (`complete` lists full names, never a prefix's)."""
    try:
        text = gdb.execute("complete %s" % name, to_string=True)
    except gdb.error:
        return False
    return name in [line.strip() for line in text.splitlines()]


class _Placeholder(gdb.Command):
    def __init__(self, name, ours):
        self.__doc__ = PLACEHOLDER_DOC % (name, ours)
        self._name = name
        self._ours = ours
        super().__init__(name, gdb.COMMAND_STACK if name not in ("py-print", "py-locals") else gdb.COMMAND_DATA, gdb.COMPLETE_NONE)

    def invoke(self, argument, from_tty):
        ours = self._ours
        if not defined(" ".join(ours.split()[:2])):
            raise gdb.GdbError("%s: CPython's libpython.py is not loaded here (it comes with python3.X-dbg); "
                               "pytstates' `%s` is not available in this build" % (self._name, ours))
        gdb.write("%s: CPython's libpython.py is not loaded here; pytstates' `%s` answers:\n" % (self._name, ours))
        try:
            gdb.execute(("%s %s" % (ours, argument)).strip(), from_tty)
        except gdb.error as e:  # ours said why in one line: said once, never as a Python exception
            raise gdb.GdbError(str(e))


def placeholders():
    made = []
    for name, ours in OURS:
        if not defined(name):
            _Placeholder(name, ours)
            made.append(name)
    return made


class _WhichAnswersWhat(gdb.Command):
    __doc__ = WHICH_ANSWERS_WHAT.split("\n")[0] + "\n" + WHICH_ANSWERS_WHAT

    def __init__(self):
        super().__init__("pyt libpython", gdb.COMMAND_SUPPORT, gdb.COMPLETE_NONE)

    def invoke(self, argument, from_tty):
        gdb.write(WHICH_ANSWERS_WHAT + "\n")
        loaded = [name for name, _ in OURS if defined(name) and not _is_placeholder(name)]
        gdb.write("Now: libpython.py's commands are %s.\n" % ("loaded" if loaded else "not loaded"))


def _is_placeholder(name):
    try:
        return "is not loaded here" in gdb.execute("help %s" % name, to_string=True)
    except gdb.error:
        return False


placeholders()
if defined("pyt") and not defined("pyt libpython"):
    _WhichAnswersWhat()
