# SPDX-License-Identifier: Apache-2.0
"""gdb's own `bt` names the Python functions each CPython evaluation frame runs.

A frame filter `pytstates` (global dictionary, priority 100, on by default; `bt -no-filters`,
`disable frame-filter global pytstates` turn it off). Beside each real (not inlined)
`_PyEval_EvalFrameDefault` frame it adds, as that frame's elided rows, the Python frames that
call of the eval loop runs, innermost first (from 3.11 one C call runs several), where pystack's
--native puts them:

    #11 0x... in _PyEval_EvalFrameDefault (tstate=..., frame=0x7ffff7fb8020, throwflag=0) at ...
        (Python) on_recv_msg () at /srv/logic_mytorch.py:16

The rows wrap the eval frame itself: gdb numbers a frame the first time it prints it, so the C
frame keeps its #N, the Python rows have none, `frame N` still means gdb's frames and `bt -hide`
drops the rows. The thread's stack is asked of the view once per bt, before gdb walks the frames
(the view is opened there, if nothing opened it before: never in the middle of gdb's walk); the
view ties each Python frame to its eval frame by eval_group, which counts the thread's eval frames
from the innermost as this filter does.
gdb prints a decorator's strings raw: every name read from the target is escaped here.
"""
import gdb
from gdb.FrameDecorator import FrameDecorator

from . import gdb_stop
from .gdb_nav import _is_eval as is_eval_frame  # a real (not inlined) eval-loop call, as the view counts them
from .gdb_text import shown_field


class _Row(FrameDecorator):
    """One Python frame, printed as an elided row of its eval frame."""

    def __init__(self, base, function, filename=None, line=None):
        super().__init__(base)
        self._function = function
        self._filename = filename
        self._line = line

    def function(self):
        return self._function

    def address(self):
        return None  # no "0x... in": the row is no machine frame

    def filename(self):
        return self._filename

    def line(self):
        return self._line

    def frame_args(self):
        return None

    def frame_locals(self):
        return None

    def elided(self):
        return None


def python_row(base, frame):
    line = frame.get("line")
    return _Row(base, "(Python) " + shown_field(frame, "function"), shown_field(frame, "file") or None,
                line if isinstance(line, int) and line > 0 else None)


class _EvalFrame(FrameDecorator):
    """An eval frame: itself, then its Python frames as elided rows."""

    def __init__(self, base, rows):
        super().__init__(base)
        self._rows = rows

    def elided(self):
        return iter(self._rows)


def _groups(lwp):
    """The thread's Python frames by eval group ({} when it runs none or the view cannot say)."""
    try:
        answer = gdb_stop.ask({"ask": "stack", "lwp": lwp})
    except gdb_stop.Unavailable:
        return {}
    groups = {}
    for frame in answer.get("frames") or ():
        group = frame.get("eval_group")
        if isinstance(group, int) and group >= 0:
            groups.setdefault(group, []).append(frame)
    return groups


def _decorate(frames, groups):
    evals = 0
    for decorator in frames:
        try:
            frame = decorator.inferior_frame()
            if not is_eval_frame(frame):
                yield decorator
                continue
            python = groups.get(evals)
            evals += 1
            yield _EvalFrame(decorator, [python_row(frame, f) for f in python]) if python else decorator
        except Exception:  # a row gdb cannot print whole is worse than a row without Python
            yield decorator


class PythonFrameFilter(object):
    """The frame filter. gdb reads `enabled` before each bt (per thread under thread apply), then
    calls filter() once. A thread that runs no Python frame (or a stop the view cannot read) reads
    as disabled: gdb then prints bt itself, as fast as without pytstates (a filter, even one that
    changes nothing, makes gdb print every row through Python: 1.2 x on the seed's core). So
    `info frame-filter` shows No while such a thread is selected. `disable frame-filter global
    pytstates` is kept until `enable frame-filter global pytstates`."""

    def __init__(self):
        self.name = "pytstates"
        self.priority = 100
        self._wanted = True
        self._groups = (None, None)  # ((generation, lwp), groups): what enabled read, for filter()
        gdb.frame_filters[self.name] = self

    @property
    def enabled(self):
        if not self._wanted:
            return False
        try:
            key = (gdb_stop.generation, gdb_stop.selected_lwp())
            if self._groups[0] != key:
                self._groups = (key, _groups(key[1]))
            return bool(self._groups[1])
        except Exception:
            return False

    @enabled.setter
    def enabled(self, value):
        self._wanted = bool(value)

    def filter(self, frames):
        try:
            key = (gdb_stop.generation, gdb_stop.selected_lwp())
            groups = self._groups[1] if self._groups[0] == key else _groups(key[1])
        except Exception:
            return frames
        return _decorate(frames, groups or {})


PythonFrameFilter()
