# SPDX-License-Identifier: Apache-2.0
# Makes objects of known values, prints their id()s and reprs as one JSON line, then waits in a
# function whose locals are known, until it is dumped (objects_test.py). Runs on 3.8 - 3.15.
import collections
import json
import sys
import threading
import time

GLOBAL_COUNTER = 12345
WAIT_LOCK = threading.Lock()  # waiter waits inside `with WAIT_LOCK:` (a block <= 3.10, a handler 3.11+)


class Plain:
    def __init__(self):
        self.name = "plain-object"
        self.count = 42
        self.ratio = 1.5


class Many:
    pass


class WithSlotsAndDict:
    __slots__ = ("a", "__dict__")


class Big(int):
    pass


def make():
    plain = Plain()
    many = Many()
    for i in range(40):  # past any cached-keys size: a combined dict
        setattr(many, "attr%d" % i, i)
    mixed = WithSlotsAndDict()
    mixed.a = 1
    mixed.extra = "in-dict"
    dict_first = Plain()
    dict_first.__dict__  # a dict made for the instance (3.11+: no longer inline values)
    dict_first.added = -7
    big = Big(7)
    big.tag = "bigtag"
    dq = collections.deque(range(150))
    for _ in range(70):
        dq.popleft()
    objs = {
        "plain": plain, "many": many, "mixed": mixed, "dict_first": dict_first, "big": big,
        "ints": [0, 1, -1, 2**30, -(2**31), 2**62, -(2**63), 2**64, 1234567890123],
        "floats": [1.5, -0.25, 100.0, 1e20, 1e-7, 3.141592653589793],
        "strs": ["abc", "", "it's", "caf\u00e9", "x" * 200, "tab\there"],
        "bytes": [b"ab\x00\xff", b""],
        "tuple": (1, "two", None, True, False),
        "deque": dq,
        "set": {3, 4, 5},
        "dict": {"k1": 1, "k2": "v2"},
    }
    return objs


def r(v):
    """The value as pytstates --locals shows it."""
    if isinstance(v, (str, bytes)) and len(v) > 80:
        return repr(v[:80]) + "..."
    if isinstance(v, int) and not isinstance(v, Big) and not -(2**63) <= v < 2**63:
        return "<int at %#x>" % id(v)  # no short repr past int64
    if isinstance(v, (int, float, str, bytes, type(None))) and not isinstance(v, Big):
        return repr(v)
    return "<%s at %#x>" % (type(v).__name__, id(v))


BUILTIN_REPRS = tuple(t.__repr__ for t in (object, type(None), bool, int, float, str, bytes, list, tuple, dict,
                                           set, frozenset))


def tp_name(t):
    """The type's tp_name: a heap type's is its __name__, a static type's names its module."""
    if t.__flags__ & (1 << 9) or t.__module__ == "builtins":
        return t.__name__
    return "%s.%s" % (t.__module__, t.__qualname__)


def local_repr(v):
    """The value as pytstates --locals shows it (symbols/cpython/object_repr.h): repr() where
    CPython's own repr runs for it and all it holds, else <TYPE object at 0x...> (these are short:
    no bound reached)."""
    def builtin(x):
        if type(x).__repr__ not in BUILTIN_REPRS:
            return False
        if isinstance(x, dict):
            return all(builtin(k) and builtin(y) for k, y in x.items())
        return all(builtin(y) for y in x) if isinstance(x, (list, tuple, set, frozenset)) else True
    return repr(v) if builtin(v) else "<%s object at %#x>" % (tp_name(type(v)), id(v))


def expected(objs):
    facts = {"version": "%d.%d" % sys.version_info[:2], "objects": {}, "scalars": []}
    for key in ("plain", "many", "mixed", "dict_first", "big"):
        o = objs[key]
        facts["objects"][key] = {"id": id(o), "type": type(o).__name__,
                                 "attributes": {k: r(v) for k, v in vars(o).items()}}
    for key in ("ints", "floats", "strs", "bytes"):
        for v in objs[key]:
            facts["scalars"].append({"id": id(v), "repr": r(v)})
    facts["objects"]["tuple"] = {"id": id(objs["tuple"]), "items": [r(v) for v in objs["tuple"]]}
    facts["objects"]["deque"] = {"id": id(objs["deque"]), "items": [r(v) for v in objs["deque"]]}
    facts["objects"]["set"] = {"id": id(objs["set"]), "items": sorted(r(v) for v in objs["set"])}
    facts["objects"]["dict"] = {"id": id(objs["dict"]), "items": [[r(k), r(v)] for k, v in objs["dict"].items()]}
    facts["objects"]["list"] = {"id": id(objs["ints"]), "items": [r(v) for v in objs["ints"]]}
    facts["global_counter"] = id(GLOBAL_COUNTER)
    return facts


async def inner_coro(event_like):
    await event_like


class Awaitable:
    def __await__(self):
        yield "suspended-here"


async def outer_coro(aw):
    local_in_coro = "coro-local"
    await inner_coro(aw)


def gen_delegate():
    yield "g"


def gen_outer():
    gen_local = 99
    yield from gen_delegate()


def waiter(arg_text, arg_number, *rest, flag=True, **extra):
    local_float = 2.5
    local_none = None
    local_list = [1, 2]
    captured = "captured-value"

    def closure():
        return captured

    waiting_line = 1  # the frame waits below
    FACTS["waiter_locals"] = {k: r(v) for k, v in locals().items()}  # ObjectReader::shortRepr's
    FACTS["waiter_reprs"] = {k: local_repr(v) for k, v in locals().items()}  # --locals'
    with WAIT_LOCK:
        while True:
            snooze(FACTS)


def snooze(facts):
    """Sleeps; the first time, says where its caller (waiter) is: frame.f_lasti is, in every
    version, the bytes from the code's first instruction to the one the frame runs (the call)."""
    if "waiter_lasti" not in facts:
        caller = sys._getframe(1)
        facts["waiter_lasti"] = caller.f_lasti
        if hasattr(caller.f_code, "co_positions"):  # 3.11+: the call's whole position (PEP 657)
            facts["waiter_position"] = list(caller.f_code.co_positions())[caller.f_lasti // 2]
        sys.stdout.write("FACTS " + json.dumps(facts) + "\nREADY\n")
        sys.stdout.flush()
    time.sleep(1)


if __name__ == "__main__":
    OBJS = make()
    FACTS = expected(OBJS)
    coro = outer_coro(Awaitable())
    coro.send(None)  # suspended in inner_coro's await
    gen = gen_outer()
    next(gen)  # suspended in yield from
    FACTS["coro"] = id(coro)
    FACTS["gen"] = id(gen)
    FACTS["coro_await"] = id(coro.cr_await)
    FACTS["gen_yieldfrom"] = id(gen.gi_yieldfrom)
    FACTS["thread"] = threading.get_native_id()
    FACTS["globals"] = id(globals())
    FACTS["waiter_exception_table"] = len(getattr(waiter.__code__, "co_exceptiontable", b""))
    waiter("text-arg", 7, "rest1", flag=False, kw="x")
