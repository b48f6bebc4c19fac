// SPDX-License-Identifier: Apache-2.0
// Python objects read from a target's memory through the layout: types, instance attributes,
// scalars, containers, module globals, and the short reprs `--locals` shows. Every read is
// bounded and checked: a pointer that is not an object gives nullopt (or an empty answer),
// never a loop or a huge allocation.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/layout.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/memory.h"

namespace pytstates {

class ObjectReader {
public:
    ObjectReader(const Memory& memory, const CPythonLayout& layout);

    const Memory& memory() const { return memory_; }
    const CPythonLayout& layout() const { return layout_; }

    // The object's type (ob_type); nullopt when unreadable or null.
    std::optional<uint64_t> type(uint64_t object) const;
    // tp_name of the object's type, when it reads as a type name (a short dotted identifier,
    // or "<dummy key> type" and the like are refused).
    std::optional<std::string> typeName(uint64_t object) const;
    // The type or one of its bases (tp_base, at most 64 deep) has this tp_name ("_thread.lock",
    // "Condition", "_asyncio.Task").
    bool isInstance(uint64_t object, const std::string& tpName) const;

    // The instance attribute `name` of the object: from its own __dict__ (tp_dictoffset <= 3.10,
    // 3.11's managed dict or values, 3.12's dict-or-values, 3.13+'s inline values or managed
    // dict), never the type's (a class attribute or a method is not found). nullopt when the
    // object has no such attribute or it cannot be read.
    std::optional<uint64_t> attribute(uint64_t object, const std::string& name) const;
    // Every instance attribute (name object, value object), at most maxCount.
    std::optional<std::vector<DictEntry>> attributes(uint64_t object, size_t maxCount = 256) const;

    // int (and bool) values that fit int64: <= 3.11's ob_size digit count, 3.12+'s lv_tag.
    std::optional<int64_t> integer(uint64_t object) const;
    std::optional<double> floating(uint64_t object) const;
    // A str's text as UTF-8, at most maxChars characters (*truncated says when it was longer).
    std::optional<std::string> str(uint64_t object, size_t maxChars = 1024, bool* truncated = nullptr) const;
    std::optional<std::vector<uint8_t>> bytes(uint64_t object, size_t maxSize = 1 << 16, bool* truncated = nullptr) const;
    // True or False (a bool, by its type's name); nullopt for anything else.
    std::optional<bool> boolean(uint64_t object) const;
    bool isNone(uint64_t object) const;

    // Container items (object pointers), at most maxCount, first ones first; nullopt when the
    // object is not of that type or unreadable. *total (when given) is the container's length.
    std::optional<std::vector<uint64_t>> listItems(uint64_t list, size_t maxCount, size_t* total = nullptr) const;
    std::optional<std::vector<uint64_t>> tupleItems(uint64_t tuple, size_t maxCount, size_t* total = nullptr) const;
    // collections.deque: its blocks of 64 items, leftblock to rightblock.
    std::optional<std::vector<uint64_t>> dequeItems(uint64_t deque, size_t maxCount, size_t* total = nullptr) const;
    // set and frozenset: the live entries of the hash table (deleted slots left out).
    std::optional<std::vector<uint64_t>> setItems(uint64_t set, size_t maxCount) const;
    // A dict's live entries, combined or split tables (a split dict's values array with its
    // keys), at most maxCount.
    std::optional<std::vector<DictEntry>> dictItems(uint64_t dict, size_t maxCount) const;
    // The value under a str key; nullopt when absent or unreadable.
    std::optional<uint64_t> dictValue(uint64_t dict, const std::string& key) const;
    // sys.modules[module].__dict__[name], from the interpreter's sysdict.
    std::optional<uint64_t> moduleGlobal(uint64_t sysdict, const std::string& module, const std::string& name) const;
    // A module object's __dict__ (md_dict).
    std::optional<uint64_t> moduleDict(uint64_t module) const;

    // The value as pystack's --locals shows it: 'text' (cut at maxLen with ...), b'..', 42,
    // 1.5, True, False, None; `<TypeName at 0x...>` for anything else; nullopt when the object
    // cannot be read at all (no type).
    std::optional<std::string> shortRepr(uint64_t object, size_t maxLen = 80) const;
    // The same, only for str, bytes, int, float, bool and None: the JSON `value` (null otherwise).
    std::optional<std::string> scalarRepr(uint64_t object, size_t maxLen = 80) const;

private:
    std::optional<uint64_t> typeFlags(uint64_t type) const;
    std::optional<std::string> typeNameOfType(uint64_t type) const;
    // The instance dict's object, or the values array with the keys that name them.
    struct InstanceStore {
        uint64_t dict = 0;
        uint64_t keys = 0, values = 0;  // a values array (PyObject*[]) and its PyDictKeysObject
    };
    std::optional<InstanceStore> instanceStore(uint64_t object) const;

    // A dict key's text equals `name` (an attribute or global name): each key object's first
    // kKeyChars characters read once (a thousand Thread objects share their keys' str objects).
    bool keyIs(uint64_t key, const std::string& name) const;
    static constexpr size_t kKeyChars = 64;

    const Memory& memory_;
    const CPythonLayout& layout_;
    mutable std::map<uint64_t, std::optional<std::string>> typeNames_;  // type -> tp_name
    mutable std::map<uint64_t, std::optional<std::string>> keyTexts_;   // key object -> its first kKeyChars characters
};

// Python's repr() of a float (the shortest text that reads back as the same double).
std::string pythonFloatRepr(double value);
// Python's repr() of a str / bytes value (quotes chosen and escapes made as Python does).
std::string pythonStrRepr(const std::string& utf8);
std::string pythonBytesRepr(const std::vector<uint8_t>& bytes);

}  // namespace pytstates
