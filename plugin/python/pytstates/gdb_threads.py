# SPDX-License-Identifier: Apache-2.0
"""`info threads` shows the Python thread name where a thread runs Python under one
(threading.Thread's name), through gdb.InferiorThread.name: `set pyt thread-names off` gives
gdb's own names back.

The names are read once per stop, when anything first asks pytstates about the stop (bt on a
thread that runs Python, a printer, a pyt command, `set pyt thread-names on`), and at the prompt
of a core (one stop: the analysis is paid once). A live process is not analysed at each prompt
for the names alone (stepping through C would pay for it at every step): until something asks,
the names of the last stop stay. A thread we named whose Python name is gone gets gdb's name
back; a name the user gave with `thread name` is left alone.
"""
import gdb

from . import gdb_stop
from .gdb_text import shown


def ensure_prefix(command_class, name, doc):
    """`set pyt` / `show pyt`, unless another part of pytstates made them already (gdb 13 drops
    a prefix's subcommands when the prefix is defined again)."""
    try:
        if name in [line.strip() for line in gdb.execute("complete %s" % name, to_string=True).splitlines()]:
            return
    except gdb.error:
        pass

    class _Prefix(gdb.Command):
        __doc__ = doc

        def __init__(self):
            super().__init__(name, command_class, gdb.COMPLETE_NONE, True)

        def invoke(self, argument, from_tty):
            gdb.execute("help %s" % name, from_tty)

    _Prefix()


ensure_prefix(gdb.COMMAND_DATA, "set pyt", "pytstates' settings.")
ensure_prefix(gdb.COMMAND_DATA, "show pyt", "pytstates' settings.")

_named = {}  # (inferior num, thread num) -> the name we gave
_named_generation = [-1]
_enabled = [True]


def _python_runs():
    """CPython is loaded: the view is worth opening for names (a C program's stop costs this only)."""
    try:
        gdb.parse_and_eval("(long)&_PyRuntime")
        return True
    except gdb.error:
        return False


def _thread_name(lwp):
    try:
        answer = gdb_stop.ask({"ask": "stack", "lwp": lwp})
    except gdb_stop.Unavailable:
        return None
    for key in ("thread_name", "python_name", "name"):
        value = answer.get(key)
        if isinstance(value, str) and value:
            return shown(value)
    return None


def name_threads():
    """Give each thread of the selected inferior its Python name (once per stop)."""
    if not _enabled[0] or _named_generation[0] == gdb_stop.generation:
        return
    _named_generation[0] = gdb_stop.generation
    inferior = gdb.selected_inferior()
    if inferior is None or not inferior.pid and not inferior.threads():
        return
    if not _python_runs():
        return
    for thread in inferior.threads():
        key = (inferior.num, thread.num)
        ours = _named.get(key)
        if ours is not None and thread.name != ours:
            _named.pop(key)  # renamed by the user since: theirs
            continue
        name = _thread_name(thread.ptid[1] or thread.ptid[0])
        if name:
            thread.name = name
            _named[key] = name
        elif ours is not None:
            thread.name = None
            _named.pop(key)


def forget_names():
    for inferior in gdb.inferiors():
        for thread in inferior.threads():
            ours = _named.get((inferior.num, thread.num))
            if ours is not None and thread.name == ours:
                thread.name = None
    _named.clear()
    _named_generation[0] = -1


class ThreadNames(gdb.Parameter):
    """Whether `info threads` shows each thread's Python name (threading.Thread's name).
When on, pytstates names every thread that runs Python under a name (gdb.InferiorThread.name, as
`thread name` does) once per stop; off gives every such thread gdb's own name back."""
    set_doc = "Set whether info threads shows Python thread names."
    show_doc = "Show whether info threads shows Python thread names."

    def __init__(self):
        super().__init__("pyt thread-names", gdb.COMMAND_DATA, gdb.PARAM_BOOLEAN)
        self.value = True

    def get_set_string(self):
        _enabled[0] = bool(self.value)
        try:
            if self.value:
                _named_generation[0] = -1
                name_threads()
            else:
                forget_names()
        except Exception as e:
            return "pytstates: %s" % e
        return ""

    def get_show_string(self, svalue):
        return "Python thread names in info threads are %s." % svalue


def _on_first_answer():
    try:
        name_threads()
    except Exception:  # never a traceback in the middle of a bt or a print
        pass


def _before_prompt():
    try:
        from .gdb import _is_live
        inferior = gdb.selected_inferior()
        if inferior is not None and inferior.threads() and not _is_live(inferior):
            name_threads()
    except Exception:  # never a traceback at the prompt
        pass


def _on_exited(_event):
    _named.clear()


ThreadNames()
gdb.events.before_prompt.connect(_before_prompt)
gdb_stop.first_answer.append(_on_first_answer)
gdb.events.exited.connect(_on_exited)
