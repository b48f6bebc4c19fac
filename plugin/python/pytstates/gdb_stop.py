# SPDX-License-Identifier: Apache-2.0
"""What bt's Python rows, the pretty-printers, the convenience functions and the thread names ask
of one stop: the view's answers (gdb_nav.ask: the view of the stop, opened once), each asked once
and kept until the stop changes: a printer is asked about the same pointer in many of bt's rows,
and one answer costs 0.26 ms through JSON where a kept one costs 0.01 ms (the seed's core). They
are dropped with gdb_nav's view of the stop, on the gdb events it lists: a stop, a continue, a
module loaded or dropped, memory or a register written by gdb (`set var`), an inferior call, a new
thread. A program that writes its own memory fires none of them, but it only runs between `cont`
and `stop`.

ask() raises Unavailable (one line) and nothing else: callers inside bt or a printer turn that
into a row or a plain address, never a traceback.
"""
import json

import gdb

generation = 0  # one number per stop: what was read under an older one is dropped
_answers = {}
first_answer = []  # called once per stop after the view first answers (thread names in batch mode)
_told = [-1]


class Unavailable(Exception):
    """The view cannot answer this (no CPython, no process, an address that is no thread state)."""


def _drop(*_):
    global generation
    generation += 1
    _answers.clear()


def _connect():
    """Kept answers go when gdb_nav drops the view of the stop (on gdb's events, listed there)."""
    try:
        from . import gdb_nav
    except ImportError:
        return  # no view: every answer is Unavailable, and stays so
    gdb_nav.on_drop(_drop)


def _view_ask(question):
    """The view the pyt commands use (gdb_nav.py: opened once per stop): the answer as a dict."""
    try:
        from . import gdb_nav
    except ImportError as e:
        raise Unavailable("this pytstates has no view of the stop (%s)" % e)
    return gdb_nav.ask(question)


def ask(question):
    """The view's answer to question (a dict), asked once per stop."""
    inferior = gdb.selected_inferior()
    key = (inferior.num, inferior.pid, json.dumps(question, sort_keys=True))
    answer = _answers.get(key)
    if answer is None:
        try:
            answer = _view_ask(question)
        except Unavailable as e:
            answer = e
        except gdb.GdbError as e:
            answer = Unavailable(str(e))
        except Exception as e:  # the view's own failure is one line here too
            answer = Unavailable("%s: %s" % (type(e).__name__, e))
        if not isinstance(answer, (dict, Unavailable)):
            answer = Unavailable("the view answered %s" % type(answer).__name__)
        _answers[key] = answer
    if isinstance(answer, Unavailable):
        raise answer
    if _told[0] != generation:
        _told[0] = generation
        for listener in first_answer:
            try:
                listener()
            except Exception:
                pass
    return answer


def stop_is_read():
    """Something asked the view about this stop already (bt, a pyt command, a printer): asking
    again costs a lookup, not an analysis."""
    if _told[0] == generation:
        return True
    try:
        from . import gdb_nav
        return gdb_nav.view_is_open()
    except Exception:
        return False


def selected_lwp():
    thread = gdb.selected_thread()
    if thread is None:
        return 0
    return thread.ptid[1] or thread.ptid[0]


_connect()
