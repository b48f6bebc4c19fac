# SPDX-License-Identifier: Apache-2.0
# Holds, as locals of three frames, the values pystack's and py-spy's own local-variable tests
# assert (bloomberg/pystack tests/integration/test_local_variables.py, benfred/py-spy
# tests/scripts/local_vars.py; numpy's scalars left out) and the reprs issue 42 names (lone
# surrogates, quotes, non-printables, sets, cycles, subclasses, modules, C functions, bound
# methods); prints each frame's locals as
# repr() gives them (the program's word) with which repr CPython runs for each, then waits until
# it is dumped (values_test.py). Runs on 3.8 - 3.15.
import abc
import collections
import json
import os
import sys
import time
import types

FACTS = {"frames": {}}


class A:  # object.__repr__: <__main__.A object at 0x...>
    def __init__(self, x=None, y=None):
        self.x = x
        self.y = y


class Custom:  # its own __repr__: only running it could print it
    def __repr__(self):
        return "Custom!"


class Outer:
    class Inner:  # type.__repr__: <class '__main__.Outer.Inner'>
        pass


class Abstract(abc.ABC):  # a metaclass (ABCMeta) that keeps type.__repr__
    pass


class MyList(list):  # list's repr
    pass


class MySet(set):  # set's repr, named: MySet({1})
    pass


BUILTIN_REPRS = tuple(t.__repr__ for t in (object, type(None), bool, int, float, str, bytes, list, tuple, dict,
                                           set, frozenset, type, type(lambda: None), types.ModuleType,
                                           types.BuiltinFunctionType, types.MethodWrapperType, types.MethodType))


def runs_builtin_repr(v, seen=None):
    """True when repr(v) is CPython's own (no Python-level __repr__ anywhere inside it)."""
    seen = set() if seen is None else seen
    if type(v).__repr__ not in BUILTIN_REPRS:
        return False
    if id(v) in seen:
        return True
    seen.add(id(v))
    if isinstance(v, dict):
        return all(runs_builtin_repr(k, seen) and runs_builtin_repr(x, seen) for k, x in v.items())
    if isinstance(v, (list, tuple, set, frozenset)):
        return all(runs_builtin_repr(x, seen) for x in v)
    return True


def memory_repr(v):
    """What a reader of memory prints for a list holding objects with their own __repr__: each of
    those as <TYPE object at 0x...>, the rest as repr() prints it."""
    if type(v).__repr__ not in BUILTIN_REPRS:
        return "<%s object at %#x>" % (type(v).__name__, id(v))
    if type(v) is list:
        return "[" + ", ".join(memory_repr(x) for x in v) + "]"
    return repr(v)


def record(frame_name, values):
    facts = {}
    for name, v in values.items():
        facts[name] = {"repr": repr(v), "builtin": runs_builtin_repr(v), "type": type(v).__name__, "id": "%#x" % id(v)}
        if type(v) is list and not facts[name]["builtin"]:
            facts[name]["memory_repr"] = memory_repr(v)
    FACTS["frames"][frame_name] = facts


def pystack_values():
    """pystack's test_common_types, test_bytes*, test_split_dict, test_dict_with_dummy_entries,
    test_gigantic_integer, test_custom_object, test_output_limiting."""
    none_value = None
    true_value = True
    false_value = False
    small_integer = 1234
    big_integer = 1234567890123456
    string = "Hello world"
    float_value = 3.14
    list_value = [1, 2, 3, [1, 2, [1]]]
    tuple_value = (1, 2, 3, (1, 2, [1]))
    dict_value = {1: 2, 3: 4, "Hello": 3.14, (1, 2): [3, 4]}
    unicode_dict = {"a": "b", "c": "d", "e": "f"}
    bytes_value = b"Hello world"
    binary_bytes = b"\xFF"
    instance = A(1, "barbaridad")
    split_dict = instance.__dict__
    dummy_dict = {x: x for x in range(10)}
    del dummy_dict[0]
    del dummy_dict[3]
    dummy_dict[1] = 42
    gigantic_integer = 999999999999999999999999
    custom_object = A()
    big_list = list(range(50))
    big_tuple = tuple(range(50))
    big_dict = {x: x for x in range(50)}
    big_string = "a" * 100
    recursive_list = [1, 2, 3]
    recursive_list.append(recursive_list)
    recursive_dict = {1: 2, 3: 4}
    recursive_dict[2] = recursive_dict
    record("pystack_values", locals())
    pyspy_values()


def pyspy_values(arg1="foo", arg2=None, arg3=True):
    """py-spy's tests/scripts/local_vars.py (less numpy's scalars)."""
    local1 = [-1234, 5678]
    local2 = ("a", "b", "c")
    local3 = 123456789123456789
    local4 = 3.1415
    local5 = {"a": False, "b": (1, 2, 3)}
    local6 = ("-" * 115, {"key": {"key": {"key": "value"}}})
    local25 = "\u6d4b\u8bd51" * 500
    local26 = ""
    record("pyspy_values", locals())
    issue_values()


def issue_values():
    """What issue 42 asks of a repr: Python's quotes, escapes, lone surrogates, big ints, sets,
    cycles, subclasses, bounds."""
    surrogates = b"\xff\xed\xa0\x80".decode("utf-8", "surrogateescape")  # '\udcff\udced\udca0\udc80'
    lone_surrogates = "\udcff\ud800"
    single_quote = "it's"
    double_quote = 'say "hi"'
    both_quotes = "it's \"both\""
    non_printable = "a\x00\x1f\x7f\x85\xa0\u200b\u2028\U000e0001z\\"
    printable_wide = "caf\u00e9 \u20ac \U0001f600 \u6d4b"
    bytes_quotes = b"it's \"b\" \t\n\r\x7f\x80"
    two_power_1000 = 2 ** 1000
    negative_big = -(2 ** 200) + 12345
    int64_edges = [2 ** 63 - 1, -(2 ** 63), 2 ** 64, -(2 ** 30), 2 ** 30]
    floats = [0.1, -0.0, 1e22, 1e-5, 1.5e300, float("inf"), float("-inf"), float("nan"), 123456789.125]
    empty_set = set()
    set_value = {1, 2, 3}
    frozen = frozenset({"x"})
    empty_frozen = frozenset()
    one_tuple = (1,)
    empty_tuple = ()
    empty_list = []
    empty_dict = {}
    nested = {"list": [1, (2, 3), {"k": {4}}], "none": None, "bool": [True, False]}
    cycle_in_tuple = [1]
    cycle_in_tuple.append((cycle_in_tuple,))
    shared = [7]
    shared_twice = [shared, shared]
    my_list = MyList([1, 2])
    my_set = MySet({5})
    custom = Custom()
    custom_in_list = [Custom(), 1]
    many_items = list(range(2000))
    deep = []
    for _ in range(40):
        deep = [deep]
    long_bytes = bytes(range(256)) * 8
    classes = [A, int, collections.OrderedDict, Outer.Inner, Abstract, type]

    def closure():
        return classes

    functions = [closure, runs_builtin_repr, Outer.Inner.__init__]
    module_file = json  # importlib's _module_repr: from its spec's origin
    module_builtin = sys  # (built-in)
    module_frozen = sys.modules["_frozen_importlib"]  # (frozen)
    module_os = os  # frozen from 3.11 (its __file__ set all the same), a file before
    module_made = types.ModuleType("made_here")  # no spec, no loader, no __file__
    module_main = sys.modules["__main__"]  # run as a script: __spec__ None, its __loader__ and __file__
    builtin_function = len  # meth_repr: self is the builtins module
    builtin_method = empty_list.append  # self is a list
    method_wrapper = (7).__add__
    bound_method = A(1).__init__  # <bound method A.__init__ of <__main__.A object at 0x...>>
    callables = [len, module_builtin, bound_method]
    record("issue_values", locals())
    sys.stdout.write("FACTS " + json.dumps(FACTS) + "\nREADY\n")
    sys.stdout.flush()
    while True:
        time.sleep(1000)


if __name__ == "__main__":
    pystack_values()
