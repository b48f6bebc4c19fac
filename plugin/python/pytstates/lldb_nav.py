# SPDX-License-Identifier: Apache-2.0
"""The pyt commands in an lldb whose Python works (Debian 13's lldb-19): `pyt bt|bt-full|up|down|
frame|list|locals|print|tstate|thread` (a command container) with hyphen aliases (pyt-bt, ...), and
the summaries of PyThreadState *, PyInterpreterState * and PyObject * (category "pytstates"). The
same questions, in the same order, as the C++ plugin for lldb-14 asks (plugin/lldb/pyt_commands.cpp):
each one to the view of the current stop, kept while SBProcess.GetStopID() and the process's
unique id stay the same; the words are the engine's. Python >= 3.6 syntax only.
"""
import json

import lldb

from .libpython_frames import is_other_python_frame


class Failure(Exception):
    """One line for the user: the command fails with it."""


# The view of one stop: (process unique id, stop id, view, failure). The view reads memory through
# the reader it was opened with for as long as it lives.
_cache = {"key": None, "view": None, "failure": None}
# What pyt selected last: (process unique id, stop id, thread id, Python frame, lldb frame).
_selection = {"value": None}


def _opener():
    """open(target, process) -> view, the core's view API (gdb-nav's), adapted here in one place."""
    from . import lldb as front
    core = front._core
    if core is None:
        raise Failure("pytstates cannot run in lldb's Python: %s" % front._core_error)
    return front, core


def _open_view(process):
    front, core = _opener()
    target = process.GetTarget()
    live = front._is_live(process)
    local = front._is_local(target, live)
    threads, numbers, crash = front._threads(target, process, live, local)
    view, error = core.view_open([], front._reader(target, process), threads, front._auxv(target, process, live, local),
                                 front._executable(target), process.GetProcessID(), live, local, numbers, "", crash,
                                 front._debug_dirs(target.GetDebugger()))
    if view is None:
        raise ValueError(error or "the engine opened no view")
    return view


def ask(process, question):
    """The view's answer (a dict) to question (a dict); Failure (one line) when there is none."""
    if not process.IsValid() or process.GetNumThreads() == 0:
        raise Failure("no process or core: attach to a process or load a core first (target create --core FILE)")
    if process.GetState() in (lldb.eStateRunning, lldb.eStateStepping):
        raise Failure("the process is running: stop it first (process interrupt)")
    key = (process.GetUniqueID(), process.GetStopID())
    if _cache["key"] != key:
        _cache.update(key=None, view=None, failure=None)
        try:
            _cache["view"] = _open_view(process)
        except Failure:
            raise
        except Exception as e:  # the engine's one line (no CPython in this stop): asked once per stop
            _cache["failure"] = str(e)
        _cache["key"] = key
    if _cache["view"] is None:
        raise Failure(_cache["failure"] or "no view of this stop")
    status, answer, error = _cache["view"].ask(json.dumps(question))
    if status != 0:
        raise Failure(error or "no answer")
    answer = json.loads(answer)
    if not isinstance(answer, dict):
        raise Failure("the engine's answer is no JSON object")
    return answer


def _text(answer):
    text = answer.get("text")
    return text if isinstance(text, str) else ""


def _with_newline(text):
    return text if not text or text.endswith("\n") else text + "\n"


def _frame_name(frame):
    name = frame.GetFunctionName()
    if name:
        return name
    symbol = frame.GetSymbol()
    return symbol.GetName() if symbol.IsValid() else None


def _is_eval_loop(name):
    """The eval loop, and its parts the compiler moved out (_PyEval_EvalFrameDefault.cold): one frame."""
    base = "_PyEval_EvalFrameDefault"
    return bool(name) and (name == base or name.startswith(base + "."))


def eval_frame_indexes(thread):
    """The lldb frame index of each real (not inlined) eval-loop frame, innermost first: the view's eval_group."""
    out = []
    for i in range(thread.GetNumFrames()):
        frame = thread.GetFrameAtIndex(i)
        if frame.IsValid() and not frame.IsInlined() and _is_eval_loop(_frame_name(frame)):
            out.append(i)
    return out


def _group(frame):
    g = frame.get("eval_group")
    return g if isinstance(g, int) else -1


def _stop_key(thread):
    process = thread.GetProcess()
    return (process.GetUniqueID(), process.GetStopID(), thread.GetThreadID())


def selected_python_frame(thread, frames, evals):
    """pyt's last selection while lldb's selected frame is still its eval frame; else the innermost
    Python frame run by the nearest eval frame at or above lldb's selected frame (libpython's rule);
    else the innermost."""
    if not frames:
        return None
    selected = thread.GetSelectedFrame().GetFrameID()
    last = _selection["value"]
    if last is not None and last[:3] == _stop_key(thread) and last[3] < len(frames) and last[4] == selected:
        return last[3]
    for g, index in enumerate(evals):
        if index < selected:
            continue
        for k, frame in enumerate(frames):
            if _group(frame) == g:
                return k
        break
    return 0


def _in_call_from_python(thread, eval_index):
    """lldb's selected frame is below the eval frame eval_index, and it or a frame between is one
    libpython.py's py-up counts as a Python frame of its own (libpython_frames)."""
    for i in range(thread.GetSelectedFrame().GetFrameID(), eval_index):
        if is_other_python_frame(_frame_name(thread.GetFrameAtIndex(i))):
            return True
    return False


def select_python_frame(thread, frames, k, evals):
    """Remembers Python frame k and selects the C frame that evaluates it: that lldb frame's index,
    or None when lldb shows no eval frame for it (lldb's selection unchanged)."""
    g = _group(frames[k]) if k < len(frames) else -1
    chosen = None
    if 0 <= g < len(evals):
        thread.SetSelectedFrame(evals[g])
        chosen = evals[g]
    _selection["value"] = _stop_key(thread) + (k, thread.GetSelectedFrame().GetFrameID())
    return chosen


def _number(text):
    try:
        value = int(text, 0)
    except ValueError:
        return None
    return value if value >= 0 else None


def _value_address(value):
    if value is None or not value.IsValid() or value.GetError().Fail():
        return None, (value.GetError().GetCString() if value is not None and value.IsValid() else None)
    kind = value.GetType().GetCanonicalType().GetTypeClass()
    if kind in (lldb.eTypeClassStruct, lldb.eTypeClassUnion, lldb.eTypeClassClass):
        address = value.GetLoadAddress()
        return (None, "it has no address in the target") if address == lldb.LLDB_INVALID_ADDRESS else (address, None)
    error = lldb.SBError()
    number = value.GetValueAsUnsigned(error, 0)
    return (number, None) if error.Success() else (None, error.GetCString())


def address_of(target, frame, expression):
    """A number, or what lldb evaluates in the selected frame: a variable path first (tstate,
    tstate->interp: no code runs in the target), a register ($rdi), then lldb's expression evaluator."""
    number = _number(expression)
    if number is not None:
        return number
    if frame.IsValid():
        address, _ = _value_address(frame.GetValueForVariablePath(expression))
        if address is not None:
            return address
        if expression.startswith("$") and len(expression) > 1:
            address, _ = _value_address(frame.FindRegister(expression[1:]))
            if address is not None:
                return address
    options = lldb.SBExpressionOptions()
    options.SetUnwindOnError(True)
    options.SetIgnoreBreakpoints(True)
    options.SetTryAllThreads(False)
    value = frame.EvaluateExpression(expression, options) if frame.IsValid() else target.EvaluateExpression(expression, options)
    address, why = _value_address(value)
    if address is not None:
        return address
    why = (why or "").strip()
    if why.startswith("error: "):
        why = why[len("error: "):]
    why = why.splitlines()[0] if why else ""
    raise Failure("lldb cannot evaluate %s%s" % (expression, ": " + why if why else ""))


def _frame_line(frame):
    text = frame.get("text")
    if isinstance(text, str):
        return _with_newline(text)
    return "#%s %s (%s:%s)\n" % (frame.get("index", "?"), frame.get("function", "?"), frame.get("file", "?"), frame.get("line", "?"))


class _Stop(object):
    def __init__(self, debugger, exe_ctx):
        self.target = exe_ctx.GetTarget() if exe_ctx is not None and exe_ctx.GetTarget().IsValid() else debugger.GetSelectedTarget()
        self.process = self.target.GetProcess() if self.target.IsValid() else lldb.SBProcess()
        if not self.process.IsValid() or self.process.GetNumThreads() == 0:
            raise Failure("no process or core: attach to a process or load a core first (target create --core FILE)")
        self.thread = self.process.GetSelectedThread()
        if not self.thread.IsValid():
            self.thread = self.process.GetThreadAtIndex(0)
        self.lwp = self.thread.GetThreadID()

    def stack(self):
        answer = ask(self.process, {"ask": "stack", "lwp": self.lwp})
        frames = answer.get("frames")
        if not isinstance(frames, list) or not frames:
            raise Failure("LWP %d runs no Python frame" % self.lwp)
        evals = eval_frame_indexes(self.thread)
        return frames, selected_python_frame(self.thread, frames, evals) or 0, evals


def _is_option(word, name):
    return word in ("-" + name, "--" + name)


def bt(stop, args, full=False):
    native = locals_ = every = False
    for a in args:
        if _is_option(a, "full"):
            full = True
        elif _is_option(a, "native"):
            native = True
        elif _is_option(a, "locals"):
            locals_ = True
        elif _is_option(a, "all") or a == "-a":
            every = True
        else:
            raise Failure("unknown option %s (pyt bt [--full] [--native] [--locals] [--all])" % a)
    question = {"ask": "bt", "native": native, "locals": locals_, "full": full}
    if not every:
        return _text(ask(stop.process, _bt_question(stop.process, question, stop.thread)))
    # lldb has no `thread apply all`: every thread whose LWP runs a thread state, in lldb's order,
    # under lldb's thread number (`thread select N`); the others are left out.
    blocks = []
    for i in range(stop.process.GetNumThreads()):
        thread = stop.process.GetThreadAtIndex(i)
        if not thread.IsValid():
            continue
        try:
            text = _text(ask(stop.process, _bt_question(stop.process, question, thread)))
        except Failure:
            continue
        blocks.append("thread #%d: tid = %d\n%s" % (thread.GetIndexID(), thread.GetThreadID(), _with_newline(text)))
    if not blocks:
        ask(stop.process, {"ask": "gil-holder"})  # the view's own failure (no CPython in the target)
        raise Failure("no thread runs Python")
    return "\n".join(blocks)


def _bt_question(process, question, thread):
    """pyt bt's question for one thread: its LWP, lldb's frame number of each eval frame ("[C #L]")
    and the Python frame selected ('*')."""
    lwp = thread.GetThreadID()
    evals = eval_frame_indexes(thread)
    question = dict(question, lwp=lwp, eval_levels=evals)
    try:
        frames = ask(process, {"ask": "stack", "lwp": lwp}).get("frames")
        if isinstance(frames, list) and frames:
            question["selected"] = selected_python_frame(thread, frames, evals)
    except Failure:
        pass  # bt says why
    return question


def move(stop, args, verb):
    if len(args) > 1:
        raise Failure("takes at most one number")
    n = _number(args[0]) if args else None
    if args and n is None:
        raise Failure("not a number: " + args[0])
    frames, k, evals = stop.stack()
    if verb == "frame":
        wanted = k if n is None else n
        if wanted >= len(frames):
            raise Failure("no Python frame %d: the thread runs %d" % (wanted, len(frames)))
    elif verb == "up":
        # From a C frame below the one that evaluates frame k, in a call libpython.py counts as a
        # Python frame (take_gil, cfunction_call, ...), the first step up is to frame k itself.
        g = _group(frames[k])
        below = 0 <= g < len(evals) and _in_call_from_python(stop.thread, evals[g])
        step = (1 if n is None else n) - (1 if below else 0)
        if not below and k + 1 >= len(frames):
            raise Failure("unable to find an older Python frame")
        wanted = min(len(frames) - 1, k + max(step, 0))
    else:
        if k == 0:
            raise Failure("unable to find a newer Python frame")
        wanted = max(0, k - (1 if n is None else n))
    # A bare `pyt frame` shows the selected Python frame and leaves lldb's selection alone.
    chosen = select_python_frame(stop.thread, frames, wanted, evals) if verb != "frame" or n is not None else 0
    try:
        text = _with_newline(_text(ask(stop.process, {"ask": "frame", "lwp": stop.lwp, "frame": wanted, "eval_levels": evals})))
    except Failure:
        text = ""
    text = text or _frame_line(frames[wanted])
    if chosen is None:
        text += "lldb shows no _PyEval_EvalFrameDefault frame for it: the selected C frame is unchanged\n"
    return text


def in_frame(stop, args, verb, raw):
    frames, k, _evals = stop.stack()
    if verb == "locals":
        if args:
            raise Failure("takes no argument")
        return _text(ask(stop.process, {"ask": "locals", "lwp": stop.lwp, "frame": k}))
    if verb == "print":
        name = raw.strip()
        if not name:
            raise Failure("needs a NAME")
        return _text(ask(stop.process, {"ask": "print", "lwp": stop.lwp, "frame": k, "name": name}))
    bounds = [part for a in args for part in a.split(",") if part]
    if len(bounds) > 2:
        raise Failure("pyt list [START [END]]")
    question = {"ask": "list", "lwp": stop.lwp, "frame": k}
    for key, text in zip(("start", "end"), bounds):
        value = _number(text)
        if value is None:
            raise Failure("not a line number: " + text)
        question[key] = value
    return _text(ask(stop.process, question))


def tstate(stop, raw):
    expression = raw.strip()
    if not expression:
        answer = ask(stop.process, {"ask": "stack", "lwp": stop.lwp})
        address = answer.get("tstate")
        if not isinstance(address, int):
            raise Failure("LWP %d runs no thread state" % stop.lwp)
    else:
        address = address_of(stop.target, stop.thread.GetSelectedFrame(), expression)
    return _text(ask(stop.process, {"ask": "tstate", "address": address}))


def thread(stop, raw):
    wanted = raw.strip()
    if not wanted:
        raise Failure("needs a TARGET: a thread state (address or expression), a Python thread name or an asyncio task")
    try:
        answer = ask(stop.process, {"ask": "find-thread", "target": wanted})
    except Failure:
        if _number(wanted) is not None:
            raise
        # Not a name the view knows: an expression lldb evaluates (tstate, $rdi), its value asked again.
        address = address_of(stop.target, stop.thread.GetSelectedFrame(), wanted)
        answer = ask(stop.process, {"ask": "find-thread", "target": "0x%x" % address})
    lwp = answer.get("lwp")
    if not isinstance(lwp, int):
        raise Failure(_text(answer).strip() or "no thread runs " + wanted)
    if not stop.process.SetSelectedThreadByID(lwp):
        raise Failure("lldb has no thread with LWP %d" % lwp)
    status = lldb.SBStream()
    stop.process.GetSelectedThread().GetStatus(status)
    return _with_newline(_text(answer)) + (status.GetData() or "")


# name, help, syntax: as the C++ plugin registers them.
VERBS = (
    ("bt", "The selected thread's Python stack (its thread state, GIL line, file:line:column of every frame); --all (-a): "
     "every thread that runs Python, one block each, as gdb's thread apply all pyt bt.",
     "pyt bt [--full] [--native] [--locals] [--all]"),
    ("bt-full", "pyt bt --full: the Python stack with every frame's locals.", "pyt bt-full"),
    ("up", "Select the next older Python frame (and the C frame that evaluates it).", "pyt up [N]"),
    ("down", "Select the next newer Python frame (and the C frame that evaluates it).", "pyt down [N]"),
    ("frame", "Show the selected Python frame, or select Python frame K.", "pyt frame [K]"),
    ("list", "The source around the selected Python frame's line.", "pyt list [START [END]]"),
    ("locals", "The selected Python frame's locals, as Python prints them (bounded).", "pyt locals"),
    ("print", "A name as the selected Python frame sees it: local, then global, then builtin.", "pyt print NAME"),
    ("tstate", "What a PyThreadState * is: an address or an expression (tstate, $rdi, a member); none: the selected thread's.",
     "pyt tstate [EXPR]"),
    ("thread", "Select the thread that runs a thread state, a Python thread name or an asyncio task.", "pyt thread TARGET"),
)


def run_verb(verb, debugger, command, exe_ctx, result):
    """One pyt command: its text on result, or one line of error; never a traceback."""
    try:
        import shlex
        try:
            args = shlex.split(command or "")
        except ValueError as e:
            raise Failure(str(e))
        stop = _Stop(debugger, exe_ctx)
        if verb in ("bt", "bt-full"):
            text = bt(stop, args, full=verb == "bt-full")
        elif verb in ("up", "down", "frame"):
            text = move(stop, args, verb)
        elif verb in ("list", "locals", "print"):
            text = in_frame(stop, args, verb, command or "")
        elif verb == "tstate":
            text = tstate(stop, command or "")
        else:
            text = thread(stop, command or "")
        result.PutCString(_with_newline(text).rstrip("\n"))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
    except Failure as e:
        result.SetError("pyt %s: %s" % (verb, e))
    except Exception as e:  # never a traceback into the user's session
        result.SetError("pyt %s: %s" % (verb, e))


def _summary(value, ask_what):
    """The value's address, as lldb prints a pointer, and the view's one line for it (the value is
    hidden: lldb's bt shows an argument's summary instead of its value); the address alone when
    the view has nothing to say."""
    address = 0
    try:
        error = lldb.SBError()
        address = value.GetValueAsUnsigned(error, 0)
        if error.Fail():
            return ""
        if address == 0:
            return "0x%016x" % 0
        answer = ask(value.GetProcess(), {"ask": ask_what, "address": address})
        words = answer.get("summary")
        if not (isinstance(words, str) and words):
            words = answer.get("repr") if isinstance(answer.get("repr"), str) else None
        if words:
            # An object's repr as Python prints it; a thread state's or interpreter's words in <...>.
            return ("0x%016x %s" if ask_what == "object" else "0x%016x <%s>") % (address, words)
    except Exception:  # lldb's own display stays as it is
        pass
    return "0x%016x" % address


def tstate_summary(value, internal_dict):
    return _summary(value, "tstate")


def interpreter_summary(value, internal_dict):
    return _summary(value, "interpreter")


def object_summary(value, internal_dict):
    return _summary(value, "object")


# the summary function, the types it is for (the typedef and the struct it names, as lldb spells each)
SUMMARIES = (("tstate_summary", r"^(PyThreadState|(struct )?_ts) \*$"),
             ("interpreter_summary", r"^(PyInterpreterState|(struct )?_is) \*$"),
             ("object_summary", r"^(PyObject|(struct )?_object) \*$"))


def _function(verb):
    return "pyt_" + verb.replace("-", "_")


ENTRY_POINTS = tuple(_function(verb) for verb, _h, _s in VERBS) + tuple(name for name, _r in SUMMARIES)


def _entry(verb):
    def command(debugger, command, exe_ctx, result, internal_dict):
        run_verb(verb, debugger, command, exe_ctx, result)
    command.__name__ = _function(verb)
    return command


for _verb, _help, _syntax in VERBS:
    globals()[_function(_verb)] = _entry(_verb)


def _quote(text):
    return '"' + text.replace('"', "'").replace("\\", "") + '"'


def register(debugger, entry_module):
    """The pyt container, its commands and their hyphen aliases, and the summaries (category
    pytstates, enabled); entry_module: the name lldb imported the module by that holds ENTRY_POINTS."""
    ignored = lldb.SBCommandReturnObject()
    interpreter = debugger.GetCommandInterpreter()
    interpreter.HandleCommand("command container add -o -h %s pyt" % _quote(
        "Python frames and thread states of the stop lldb shows (pytstates): pyt bt, up, down, frame, list, locals, print, tstate, "
        "thread; pyt bt --all for every thread"), ignored)
    for verb, help_text, syntax in VERBS:
        function = "%s.%s" % (entry_module, _function(verb))
        for name in ("pyt " + verb, "pyt-" + verb):
            interpreter.HandleCommand("command script add -o -f %s -h %s %s" % (function, _quote(help_text), name), ignored)
    for function, regex in SUMMARIES:
        interpreter.HandleCommand("type summary add -v -w pytstates -F %s.%s -x %s" % (entry_module, function, _quote(regex)), ignored)
    interpreter.HandleCommand("type category enable pytstates", ignored)
