# SPDX-License-Identifier: Apache-2.0
"""gdb: navigate Python as one navigates C. One prefix command `pyt` (bt, up, down, frame, list,
locals, print, tstate, thread) with hyphen aliases (pyt-bt, ...), over the engine's debugger view
(pytstates_view: one stop analysed once, every answer worded in C++).

libpython.py's own names (py-bt, py-bt-full, py-list, py-up, py-down, py-print, py-locals) are
never registered: gdb loads CPython's libpython.py after us and silently replaces a command of the
same name, and users keep its behaviour beside ours.

Also the view for the rest of the gdb front end: view() / ask(question) (one per stop, dropped
on the events that may change the target).
Errors are one line (gdb.GdbError), never a traceback; the selected thread and frame change only
where a command means to change them.
"""
import json

import gdb

from . import gdb as _front
from .core import core as _core
from .libpython_frames import is_other_python_frame

_EVAL = "_PyEval_EvalFrameDefault"
_MAX_NATIVE = 256  # as many native frames as the engine unwinds for pyt bt -native

# The view of the current stop, and a generation that changes whenever it is dropped.
_state = {"view": None, "key": None, "generation": 0, "selected": None, "levels": {}}


_drop_listeners = []


def on_drop(listener):
    """listener() each time the view of a stop is dropped (gdb_stop.py's kept answers go with it)."""
    _drop_listeners.append(listener)


def view_is_open():
    """The view of this stop is open: asking it costs a lookup, not an analysis."""
    return _state["view"] is not None


def _drop(*_args):
    view = _state["view"]
    _state["view"] = None
    _state["key"] = None
    _state["generation"] += 1
    _state["selected"] = None
    _state["levels"] = {}
    if view is not None:
        try:
            view.close()
        except Exception:
            pass
    for listener in _drop_listeners:
        try:
            listener()
        except Exception:
            pass


for _name in ("cont", "stop", "exited", "new_objfile", "clear_objfiles", "free_objfile", "memory_changed", "register_changed",
              "inferior_call", "new_thread"):
    _registry = getattr(gdb.events, _name, None)
    if _registry is not None:
        _registry.connect(_drop)


class _Refused(Exception):
    """One line for the user."""


def view():
    """The engine's view of what gdb has open now (opened once per stop); raises _Refused."""
    if _core is None:
        raise _Refused(_front._IMPORT_ERROR)
    if not hasattr(_core, "view_open"):
        raise _Refused("this pytstates core has no debugger view (rebuild it)")
    inferior = gdb.selected_inferior()
    # (not inferior.threads(): a tuple of every thread, 0.1 s for a thousand of them, per command)
    if inferior is None or gdb.selected_thread() is None:
        raise _Refused("no process or core: run, attach to a process or load a core first")
    key = (inferior.num, inferior.pid)
    if _state["view"] is not None and _state["key"] == key:
        return _state["view"]
    _drop()
    live = _front._is_live(inferior)
    names = _front._Names(_front._machine())
    threads, numbers, siginfo = _front._threads(inferior, live, names)
    executable = inferior.progspace.filename if inferior.progspace else ""
    opened, error = _core.view_open([], _front._read_memory, threads, _front._auxv(), executable or "", int(inferior.pid or 0), live,
                                    live and _front._is_local(inferior), numbers, _front._sysroot(), siginfo, _front._debug_dirs(),
                                    names.machine)
    if opened is None:
        raise _Refused(error or "cannot analyse the target")
    _state["view"] = opened
    _state["key"] = key
    return opened


def ask(question):
    """One question to the view (a dict): the answer (a dict); raises _Refused with the engine's line."""
    status, answer, error = view().ask(json.dumps(question))
    if status != 0:
        raise _Refused(error)
    return json.loads(answer)


def _lwp(thread=None):
    thread = thread or gdb.selected_thread()
    if thread is None:
        view()  # says what is missing: no process or core
        raise _Refused("no thread selected")
    return thread.ptid[1] or thread.ptid[0]


def _level(frame):
    try:
        return frame.level()
    except AttributeError:  # gdb < 11
        n, f = 0, frame.newer()
        while f is not None:
            n, f = n + 1, f.newer()
        return n


def _is_eval(frame):
    try:
        if frame.type() != gdb.NORMAL_FRAME:
            return False  # an inlined copy: the engine counts real eval-loop frames
        name = frame.name() or ""
    except gdb.error:
        return False
    return name == _EVAL or name.startswith(_EVAL + ".")  # .cold: the same frame's split-off code


def _eval_frames(thread=None):
    """The levels of gdb's eval-loop frames of the thread, innermost first, kept per stop."""
    return _frames_of(thread)[0]


def _frames_of(thread=None):
    """(eval-loop frame levels, [(level, pc)] of every frame up to _MAX_NATIVE) of the thread, kept
    per stop."""
    thread = thread or gdb.selected_thread()
    cache = _state["levels"]
    if thread.global_num in cache:
        return cache[thread.global_num]
    selected = gdb.selected_thread()
    found, native = [], []
    try:
        if selected is not None and selected.num != thread.num:
            thread.switch()
        frame, level = gdb.newest_frame(), 0
        while frame is not None and level < 200000:
            if _is_eval(frame):
                found.append(level)
            if level < _MAX_NATIVE:
                native.append((level, frame.pc() & 0xFFFFFFFFFFFFFFFF))
            try:
                frame = frame.older()
            except gdb.error:
                break
            level += 1
    except gdb.error:
        pass
    finally:
        if selected is not None and selected.is_valid() and selected.num != thread.num:
            selected.switch()
    cache[thread.global_num] = (found, native)
    return found, native


def _frame_at(level):
    frame, n = gdb.newest_frame(), 0
    while frame is not None and n < level:
        frame, n = frame.older(), n + 1
    return frame


def _selected_level():
    try:
        return _level(gdb.selected_frame())
    except gdb.error:
        return 0


def _stack():
    return ask({"ask": "stack", "lwp": _lwp()})


def _selected_index(stack, levels):
    """The selected Python frame: the one pyt up/down/frame chose, while gdb's selection stays on its
    C frame; else the first frame of the nearest eval frame at or above gdb's selected frame; else
    the thread's innermost Python frame."""
    frames = stack["frames"]
    if not frames:
        raise _Refused("LWP %d has no Python frame" % stack["lwp"])
    thread = gdb.selected_thread()
    level = _selected_level()
    mark = _state["selected"]
    if mark is not None and mark[0] == thread.global_num and mark[1] == _state["generation"] and mark[3] == level:
        if mark[2] < len(frames):
            return mark[2]
    if len(levels) >= stack["eval_groups"]:
        for group, at in enumerate(levels[:stack["eval_groups"]]):
            if at >= level:
                for f in frames:
                    if f["eval_group"] == group:
                        return f["index"]
    return 0


def _in_call_from_python(stack, levels, index):
    """libpython.py's rule for py-up: gdb's selected frame is below the eval frame that runs Python
    frame index, and it or a frame between is one libpython.py counts as a Python frame of its own
    (take_gil, the collector, cfunction_call, ...): the thread is in a call that frame made, and
    the first step up is to the frame itself."""
    group = stack["frames"][index]["eval_group"]
    if not 0 <= group < len(_usable(stack, levels)):
        return False
    try:
        frame, level = gdb.selected_frame(), _selected_level()
        while frame is not None and level < levels[group]:
            if is_other_python_frame(frame.name()):
                return True
            frame, level = frame.older(), level + 1
    except gdb.error:
        pass
    return False


def _select(stack, levels, index):
    """Makes index the selected Python frame, and its eval-loop C frame gdb's selected frame."""
    group = stack["frames"][index]["eval_group"]
    level = _selected_level()
    if group < len(levels) and len(levels) >= stack["eval_groups"]:
        frame = _frame_at(levels[group])
        if frame is not None:
            frame.select()
            level = levels[group]
    _state["selected"] = (gdb.selected_thread().global_num, _state["generation"], index, level)


def _frame_text(stack, levels, index):
    answer = ask({"ask": "frame", "lwp": stack["lwp"], "frame": index, "eval_levels": _usable(stack, levels)})
    return answer["text"]


def _usable(stack, levels):
    """The eval levels when they can be matched to the engine's groups (as many or more)."""
    return levels if len(levels) >= stack["eval_groups"] else []


class _Command(gdb.Command):
    """A pyt subcommand, also registered as pyt-NAME."""

    _verb = ""

    def __init__(self, name, category):
        super().__init__(name, category)
        self._name = name

    def invoke(self, argument, from_tty):
        try:
            self.run(gdb.string_to_argv(argument), argument)
        except gdb.GdbError:
            raise
        except _Refused as e:
            raise gdb.GdbError("pyt %s: %s" % (self._verb, e))
        except gdb.error as e:
            raise gdb.GdbError("pyt %s: %s" % (self._verb, e))
        except Exception as e:  # never a traceback into the user's session
            raise gdb.GdbError("pyt %s: %s: %s" % (self._verb, type(e).__name__, e))


class _Prefix(gdb.Command):
    """Navigate Python frames and explain Python pointers (pytstates).

pyt bt [-full] [-native] [-locals]   the selected thread's Python stack (thread apply all pyt bt)
pyt up [N] / pyt down [N]            select the Python frame N older / newer (and its C eval frame)
pyt frame [K]                        show, or select, Python frame #K
pyt list [START[,END]]               the selected frame's source (> marks its line)
pyt locals                           the selected frame's arguments and locals
pyt print NAME                       NAME as the frame sees it: local, then global, then builtin
pyt tstate [EXPR]                    what a PyThreadState* is (EXPR: an address, tstate, $rdi, ...)
pyt thread TARGET                    select the thread running a thread state, a Python thread name
                                     or an asyncio task's loop
Each is also pyt-NAME (pyt-bt, pyt-up, ...). CPython's own libpython.py commands (py-bt, py-list,
py-up, py-down, py-print, py-locals), where a python3.X-dbg loads them, are left as they are: they
need libpython's DWARF; pyt reads memory through the layouts pytstates knows (stripped CPythons
included)."""

    def __init__(self):
        super().__init__("pyt", gdb.COMMAND_STACK, gdb.COMPLETE_NONE, True)


class _Bt(_Command):
    """Print the selected thread's Python stack, innermost first.
Usage: pyt bt [-full] [-native] [-locals]

The header names the thread, the thread state it runs and its GIL line; each frame is
#K FUNCTION (FILE:LINE) [C #N] (N: gdb's frame that evaluates it, for `frame N`) with its source
line, the running instruction's columns marked (3.11+). -locals adds each frame's locals, -full
also its frame and code addresses, -native the whole native stack with each eval-loop frame's
Python frames under it. Works under `thread apply all pyt bt`."""

    _verb = "bt"

    def run(self, args, _raw):
        options = {"native": False, "locals": False, "full": False}
        for a in args:
            key = a.lstrip("-")
            if key not in options or not a.startswith("-"):
                raise _Refused("unknown argument '%s' (expected -full, -native, -locals)" % a)
            options[key] = True
        lwp = _lwp()
        status, answer, error = view().ask(json.dumps({"ask": "stack", "lwp": lwp}))
        if status != 0:  # a thread without Python is a line, not an error: thread apply all goes on
            gdb.write("%s\n" % error)
            return
        stack = json.loads(answer)
        levels = _eval_frames()
        question = {"ask": "bt", "lwp": lwp, "eval_levels": _usable(stack, levels)}
        question.update(options)
        if options["native"]:
            question["native_frames"] = _frames_of()[1]
        if stack["frames"]:
            question["selected"] = _selected_index(stack, levels)
        gdb.write(ask(question)["text"])


class _Move(_Command):
    _step = 0

    def run(self, args, _raw):
        if len(args) > 1:
            raise _Refused("takes at most one count")
        try:
            count = int(args[0], 0) if args else 1
        except ValueError:
            raise _Refused("'%s' is not a count" % args[0])
        stack = _stack()
        levels = _eval_frames()
        index = _selected_index(stack, levels)
        wanted = index + self._step * count
        if self._step > 0 and count > 0 and _in_call_from_python(stack, levels, index):
            wanted -= 1
        if wanted < 0:
            raise _Refused("no Python frame %d newer than #%d (#0 is the innermost)" % (count, index))
        if wanted >= len(stack["frames"]):
            raise _Refused("no Python frame %d older than #%d (#%d is the outermost)" % (count, index, len(stack["frames"]) - 1))
        _select(stack, levels, wanted)
        gdb.write(_frame_text(stack, levels, wanted))


class _Up(_Move):
    """Select the Python frame N (default 1) older, and the C eval frame that runs it.
Usage: pyt up [N]

From a C frame below the eval frame, in a call libpython.py's py-up counts as a Python frame
(take_gil, cfunction_call, cfunction_vectorcall_*, wrapper_call, the collector), the first step
is to that eval frame's own innermost Python frame."""

    _verb = "up"
    _step = 1


class _Down(_Move):
    """Select the Python frame N (default 1) newer, and the C eval frame that runs it.
Usage: pyt down [N]"""

    _verb = "down"
    _step = -1


class _Frame(_Command):
    """Show the selected Python frame, or select Python frame #K.
Usage: pyt frame [K]

K as pyt bt numbers the frames; the C eval frame that runs it is selected too."""

    _verb = "frame"

    def run(self, args, _raw):
        if len(args) > 1:
            raise _Refused("takes at most one frame number")
        stack = _stack()
        levels = _eval_frames()
        if not args:
            index = _selected_index(stack, levels)
        else:
            try:
                index = int(args[0], 0)
            except ValueError:
                raise _Refused("'%s' is not a frame number" % args[0])
            if not 0 <= index < len(stack["frames"]):
                raise _Refused("no Python frame #%d (LWP %d has #0-#%d)" % (index, stack["lwp"], len(stack["frames"]) - 1))
            _select(stack, levels, index)
        gdb.write(_frame_text(stack, levels, index))


class _List(_Command):
    """List the selected Python frame's source.
Usage: pyt list [START[,END]]

5 lines either side of the frame's line, START..START+10, or START..END (py-list's ranges);
'>' marks the frame's line."""

    _verb = "list"

    def run(self, _args, raw):
        question = {"ask": "list"}
        text = raw.replace(",", " ").split()
        try:
            if len(text) > 2:
                raise ValueError
            if text:
                question["start"] = int(text[0], 0)
            if len(text) == 2:
                question["end"] = int(text[1], 0)
        except ValueError:
            raise _Refused("expected START or START,END, got '%s'" % raw.strip())
        stack = _stack()
        question.update({"lwp": stack["lwp"], "frame": _selected_index(stack, _eval_frames())})
        gdb.write(ask(question)["text"])


class _Locals(_Command):
    """Print the selected Python frame's arguments and locals, name = repr.
Usage: pyt locals"""

    _verb = "locals"

    def run(self, args, _raw):
        if args:
            raise _Refused("takes no argument")
        stack = _stack()
        gdb.write(ask({"ask": "locals", "lwp": stack["lwp"], "frame": _selected_index(stack, _eval_frames())})["text"])


class _Print(_Command):
    """Print NAME as the selected Python frame sees it: a local, else a global, else a builtin.
Usage: pyt print NAME"""

    _verb = "print"

    def run(self, args, _raw):
        if len(args) != 1:
            raise _Refused("takes one NAME")
        stack = _stack()
        gdb.write(ask({"ask": "print", "lwp": stack["lwp"], "frame": _selected_index(stack, _eval_frames()), "name": args[0]})["text"])


def _address_of(expression):
    """An address, or any gdb expression that gives one (tstate, $rdi, holder->tstate)."""
    try:
        value = gdb.parse_and_eval(expression)
    except gdb.error as e:
        raise _Refused("cannot evaluate '%s': %s" % (expression, e))
    try:
        return int(value) & 0xFFFFFFFFFFFFFFFF
    except (gdb.error, ValueError, TypeError):
        try:
            return int(value.cast(gdb.lookup_type("unsigned long"))) & 0xFFFFFFFFFFFFFFFF
        except (gdb.error, ValueError, TypeError) as e:
            raise _Refused("'%s' is not an address: %s" % (expression, e))


class _Tstate(_Command):
    """Explain a PyThreadState pointer: where it runs, what caches it, or that it is stale.
Usage: pyt tstate [EXPR]

EXPR is an address or any expression (tstate, $rdi, a struct member); without it, the
selected thread's. Said: its interpreter, the thread that runs it (or that it is parked, and who
made it), every TLS cache naming it (CPython's current, PyGILState's slot, each pybind11 record's
key, on which LWPs), the findings naming it, its Python stack; or that it is in no interpreter's
list and what its memory reads as now."""

    _verb = "tstate"

    def run(self, args, raw):
        if raw.strip():
            address = _address_of(raw.strip())
        else:
            address = _stack()["tstate"]
        gdb.write(ask({"ask": "tstate", "address": address})["text"])


class _Thread(_Command):
    """Select the thread that runs a thread state, a Python thread or an asyncio task's loop.
Usage: pyt thread TARGET

TARGET: a thread state (an address or an expression), a Python thread's name
(threading.Thread.name) or an asyncio task (its address or name: the thread running its loop)."""

    _verb = "thread"

    def run(self, args, raw):
        wanted = raw.strip()
        if not wanted:
            raise _Refused("takes a thread state, a Python thread name or an asyncio task")
        if len(args) == 1:
            wanted = args[0]
        status, answer, error = view().ask(json.dumps({"ask": "find-thread", "target": wanted}))
        if status != 0:
            try:  # an expression giving a thread state or a task (tstate, $rdi)
                address = _address_of(wanted)
            except _Refused:
                raise _Refused(error)
            answer = json.dumps(ask({"ask": "find-thread", "target": str(address)}))
        found = json.loads(answer)
        inferior = gdb.selected_inferior()
        for thread in inferior.threads():
            if _lwp(thread) == found["lwp"]:
                thread.switch()
                gdb.write("[Switching to thread %d (LWP %d)]\n" % (thread.num, found["lwp"]))
                gdb.write(found["text"])
                return
        raise _Refused("gdb has no thread with LWP %d" % found["lwp"])


_Prefix()
for _cls, _category in ((_Bt, gdb.COMMAND_STACK), (_Up, gdb.COMMAND_STACK), (_Down, gdb.COMMAND_STACK), (_Frame, gdb.COMMAND_STACK),
                        (_List, gdb.COMMAND_FILES), (_Locals, gdb.COMMAND_DATA), (_Print, gdb.COMMAND_DATA), (_Tstate, gdb.COMMAND_DATA),
                        (_Thread, gdb.COMMAND_RUNNING)):
    _cls("pyt " + _cls._verb, _category)
    _cls("pyt-" + _cls._verb, _category)
