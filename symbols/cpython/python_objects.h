// SPDX-License-Identifier: Apache-2.0
// Reading the few Python objects pytstates needs (str, bytes, a type's name) from memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/layout.h"
#include "symbols/memory.h"

namespace pytstates {

// A compact str as UTF-8 (at most maxChars characters); nullopt when it does not look like one.
std::optional<std::string> readPyUnicode(const Memory& memory, const CPythonLayout& layout, uint64_t object,
                                         size_t maxChars = 1024);
// A compact str's code points (at most maxChars; *length, when given, is the str's length),
// as they are: a lone surrogate stays one. nullopt when it does not look like a compact str.
std::optional<std::u32string> readPyUnicodeCodePoints(const Memory& memory, const CPythonLayout& layout, uint64_t object,
                                                      size_t maxChars, size_t* length = nullptr);
std::optional<std::vector<uint8_t>> readPyBytes(const Memory& memory, const CPythonLayout& layout, uint64_t object,
                                                size_t maxSize = 1 << 20);
struct DictEntry {
    uint64_t key = 0, value = 0;
};
// The live entries of a dict, combined or split tables (a split dict's values array with the
// keys it shares). At most maxEntries: a dict with more gives nullopt, or with truncate its
// first maxEntries entries.
std::optional<std::vector<DictEntry>> readPyDict(const Memory& memory, const CPythonLayout& layout, uint64_t dict,
                                                 size_t maxEntries = 1 << 16, bool truncate = false);
// The entries of a PyDictKeysObject: their values from the keys themselves, or, when `values`
// is given, from that array (a split table's values: PyObject*[], at PyDictValues.values).
std::optional<std::vector<DictEntry>> readPyDictKeys(const Memory& memory, const CPythonLayout& layout, uint64_t keys,
                                                     uint64_t values, size_t maxEntries, bool truncate);
// The value under a str key in a dict (sys.modules, a module's __dict__); nullopt when absent.
std::optional<uint64_t> lookupPyDict(const Memory& memory, const CPythonLayout& layout, uint64_t dict, const std::string& key);
// tp_name of the object's type.
std::optional<std::string> readTypeName(const Memory& memory, const CPythonLayout& layout, uint64_t object);
// The same, only when it reads as a type name (a short dotted identifier): what memory that is not
// an object gives is not named as if it were one.
std::optional<std::string> readPlausibleTypeName(const Memory& memory, const CPythonLayout& layout, uint64_t object);

}  // namespace pytstates
