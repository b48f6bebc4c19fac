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
drops the rows. The thread's stack is asked of the view once per bt, when the first eval frame is
reached (a bt that shows none asks nothing); the view ties each Python frame to its eval frame
by eval_group, which counts the thread's eval frames from the innermost as this filter does.
gdb prints a decorator's strings raw: every name read from the target is escaped here.
"""
import gdb
from gdb.FrameDecorator import FrameDecorator

from . import gdb_stop
from .gdb_text import shown_field

EVAL_FUNCTION = "_PyEval_EvalFrameDefault"


def is_eval_frame(frame):
    """A real call of the eval loop: its name (a .cold part too), never an inlined copy."""
    if frame.type() != gdb.NORMAL_FRAME:
        return False
    name = frame.name()
    return name is not None and (name == EVAL_FUNCTION or name.startswith(EVAL_FUNCTION + "."))


class _Row(FrameDecorator):
    """One Python frame (or one note), printed as an elided row of its eval frame."""

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


class _ThreadStack(object):
    """The bt's thread and its Python frames by eval group, asked at the first eval frame."""

    def __init__(self, lwp):
        self.lwp = lwp
        self._groups = None
        self.problem = None

    def groups(self):
        if self._groups is None:
            self._groups = {}
            try:
                answer = gdb_stop.ask({"ask": "stack", "lwp": self.lwp})
            except gdb_stop.Unavailable as e:
                self.problem = str(e)
                return self._groups
            for frame in answer.get("frames") or ():
                group = frame.get("eval_group")
                if isinstance(group, int) and group >= 0:
                    self._groups.setdefault(group, []).append(frame)
        return self._groups


def _decorate(frames, stack):
    evals = 0
    for decorator in frames:
        try:
            frame = decorator.inferior_frame()
            if not is_eval_frame(frame):
                yield decorator
                continue
            group = evals
            evals += 1
            python = stack.groups().get(group)
            if python:
                yield _EvalFrame(decorator, [python_row(frame, f) for f in python])
            elif stack.problem is not None and group == 0:
                # Said once, on the innermost eval frame: why no Python is shown.
                yield _EvalFrame(decorator, [_Row(frame, "(Python frames not read: %s)" % stack.problem)])
            else:
                yield decorator
        except Exception:  # a row gdb cannot print whole is worse than a row without Python
            yield decorator


class PythonFrameFilter(object):
    """The frame filter: gdb calls filter() once per bt (per thread under thread apply)."""

    def __init__(self):
        self.name = "pytstates"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames):
        try:
            lwp = gdb_stop.selected_lwp()
        except Exception:
            return frames
        return _decorate(frames, _ThreadStack(lwp))


PythonFrameFilter()
