// SPDX-License-Identifier: Apache-2.0
// Python's repr() of an object, read from memory: no code runs in the target, so only what
// CPython's own repr functions would print from the object's bytes is printed, and the rest says
// what it is. Every read goes through ObjectReader (bounded, checked).
//
// Printed as Python prints it (the text is repr()'s, byte for byte, when `exact`):
//   str (quotes chosen and escapes made as unicode_repr does: lone surrogates as '\udcff',
//   non-printable characters as \x.. \u.... \U........, printable ones as themselves in UTF-8),
//   bytes, int (any size), float, bool, None, list, tuple, dict, set, frozenset, nested, and
//   subclasses of these that keep the builtin's tp_repr (a list subclass prints as a list);
//   an object whose type keeps object.__repr__: `<module.Qualname object at 0x7f...>`; a class
//   whose metaclass keeps type.__repr__: `<class 'module.Qualname'>`; a Python function:
//   `<function outer.<locals>.inner at 0x...>`; a module as importlib's _module_repr words it from
//   the module's __dict__ and __spec__ (`<module 'json' from '/usr/lib/python3.11/json/__init__.py'>`,
//   `<module 'sys' (built-in)>`, `<module 'os' (frozen)>`, `<module 'name'>`), per version
//   (3.8 - 3.10 ask the loader first, 3.11 the spec first, 3.12+ the spec only); a C function
//   `<built-in function len>` / `<built-in method append of list object at 0x...>` (meth_repr);
//   `<method-wrapper '__add__' of int object at 0x...>` (wrapper_repr); a bound method of a
//   Python function `<bound method Q.f of REPR>` (method_repr, REPR its self's repr as here).
// Otherwise (a type with its own __repr__, which only running it could print):
//   `<TYPE object at 0x...>` with TYPE its tp_name, and `exact` false.
// An object whose header or type cannot be read: `<unreadable object at 0x...>`, `readable` false
// (nested: the same text in place of the item).
//
// Bounded as pystack and libpython.py bound it: at most maxBytes of text (cut on a UTF-8
// boundary, ending with "..."), at most maxItems items per container (then ", ..."), containers
// deeper than maxDepth shown as "[...]" "(...)" "{...}" (reprlib's marker), and an object that
// contains itself shown as Python shows it: "[...]", "{...}", "(...)", "set(...)".
//
// The text is valid UTF-8 with no control character (every one is escaped as Python escapes
// it); it still goes to a terminal through commands/render/text_encoding.h like any target text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "symbols/cpython/object_reader.h"

namespace pytstates {

struct ReprLimits {
    size_t maxBytes = 1024;  // of text, "..." included (libpython.py's MAX_OUTPUT_LEN)
    size_t maxItems = 1000;  // shown per list, tuple, dict, set
    int maxDepth = 32;       // nested containers; deeper ones show as "[...]"
};

struct ObjectRepr {
    std::string type;        // tp_name of the object's type ("" when unreadable)
    std::string text;        // the repr (see above); never empty
    bool readable = false;   // the object's header and type were read
    bool exact = false;      // text is what repr() prints in the target, whole (nothing cut,
                             // nothing left as <TYPE object at ...>, nothing unreadable inside)
    bool truncated = false;  // cut by a limit (maxBytes, maxItems or maxDepth)
    // The value is a builtin CPython prints without running Python code (str, bytes, int, float,
    // bool, None, list, tuple, dict, set, frozenset, their repr-keeping subclasses, a class, a
    // function, an object.__repr__ object, a C function, a method-wrapper, a bound method, or a
    // module, whose repr importlib computes from its __dict__ and __spec__ alone): what --locals'
    // JSON gives as `value` (null otherwise).
    bool builtin = false;
};

// Reprs of one target's objects; keeps what it learned of each type (which repr it has, its
// name) across calls, so one instance per analysed stop answers many questions cheaply. Never
// throws; a pointer that is not an object gives `<unreadable object at 0x...>`.
class ReprReader {
public:
    explicit ReprReader(const ObjectReader& objects, ReprLimits limits = {});
    ObjectRepr repr(uint64_t object) const;
    ObjectRepr repr(uint64_t object, const ReprLimits& limits) const;

    // What repr() dispatches on: the builtin whose tp_repr the object's type has.
    enum class Kind { Unreadable, Other, Default, None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict, Set, FrozenSet, Type, Function,
                      Module, CFunction, MethodWrapper, Method };
    Kind kind(uint64_t object) const;

private:
    struct TypeInfo {
        Kind kind = Kind::Unreadable;
        std::string name;        // tp_name
        std::string defaultRepr; // "<module.Qualname object at " for Kind::Default
        std::string setName;     // set_repr's type name for a set subclass ("MySet"); "" for set/frozenset
    };
    const TypeInfo& typeInfo(uint64_t type) const;
    // A type's "module.Qualname" as object_repr and type_repr print it.
    std::optional<std::string> dottedName(uint64_t type) const;
    TypeInfo classify(uint64_t type) const;

    const ObjectReader& objects_;
    ReprLimits limits_;
    mutable std::map<uint64_t, TypeInfo> types_;  // type object -> what repr it has
    friend class ReprWriter;
};

// Python's repr() of a str given as its code points (the function unicode_repr is): quotes chosen
// as Python chooses them, escapes as it makes them. Valid UTF-8 out.
std::string pythonUnicodeRepr(const std::u32string& codePoints);
// Py_UNICODE_ISPRINTABLE (str.isprintable() of one character), from the Unicode database of the
// newest CPython measured (symbols/cpython/unicode_printable.cpp says which).
bool pythonIsPrintable(char32_t codePoint);

}  // namespace pytstates
