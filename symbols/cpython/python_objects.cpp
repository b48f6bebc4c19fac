// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/python_objects.h"
#include "symbols/text/utf8.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace pytstates {

namespace {
// UTF-8, except that a lone surrogate U+DC80..U+DCFF stands for the byte it escapes: Python
// decodes file names (co_filename, sys.executable) with surrogateescape, and this gives the
// name's bytes back exactly as os.fsencode() does.
void appendFsUtf8(std::string& out, uint32_t cp) {
    if (cp >= 0xdc80 && cp <= 0xdcff) out.push_back(static_cast<char>(cp - 0xdc00));
    else appendUtf8(out, static_cast<char32_t>(cp));
}
}  // namespace

std::optional<std::u32string> readPyUnicodeCodePoints(const Memory& memory, const CPythonLayout& layout, uint64_t object,
                                                      size_t maxChars, size_t* length) {
    if (!object || layout.unicodeAsciiData == kAbsent) return std::nullopt;
    auto size = memory.readValue<int64_t>(object + layout.unicodeLength);
    auto state = memory.readValue<uint32_t>(object + layout.unicodeState);
    if (!size || !state || *size < 0) return std::nullopt;
    // state bit-field: interned:2, kind:3, compact:1, ascii:1 (same order in 3.8 - 3.15); 3.14+'s
    // free-threaded builds keep `interned` in a byte of its own (atomic), the bit-fields after it.
    unsigned at = layout.freeThreaded && layout.minor >= 14 ? 8 : 2;
    unsigned kind = (*state >> at) & 7, compact = (*state >> (at + 3)) & 1, ascii = (*state >> (at + 4)) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) return std::nullopt;
    size_t n = std::min<size_t>(static_cast<size_t>(*size), maxChars);
    uint64_t data = object + (ascii ? layout.unicodeAsciiData : layout.unicodeCompactData);
    std::vector<uint8_t> raw(n * kind);
    if (!memory.readExact(data, raw.data(), raw.size())) return std::nullopt;
    std::u32string out(n, 0);
    for (size_t i = 0; i < n; ++i) {
        uint32_t cp = 0;
        for (unsigned b = 0; b < kind; ++b) cp |= uint32_t(raw[i * kind + b]) << (8 * b);
        if ((ascii && cp >= 0x80) || cp > 0x10ffff) return std::nullopt;
        out[i] = cp;
    }
    if (length) *length = static_cast<size_t>(*size);
    return out;
}

std::optional<std::string> readPyUnicode(const Memory& memory, const CPythonLayout& layout, uint64_t object,
                                         size_t maxChars) {
    auto codePoints = readPyUnicodeCodePoints(memory, layout, object, maxChars);
    if (!codePoints) return std::nullopt;
    std::string out;
    for (char32_t cp : *codePoints) appendFsUtf8(out, cp);
    return out;
}

std::optional<std::vector<uint8_t>> readPyBytes(const Memory& memory, const CPythonLayout& layout, uint64_t object,
                                                size_t maxSize) {
    if (!object) return std::nullopt;
    auto size = memory.readValue<int64_t>(object + layout.bytesSize);
    if (!size || *size < 0 || static_cast<size_t>(*size) > maxSize) return std::nullopt;
    std::vector<uint8_t> out(static_cast<size_t>(*size));
    if (!memory.readExact(object + layout.bytesData, out.data(), out.size())) return std::nullopt;
    return out;
}

std::optional<uint64_t> lookupPyDict(const Memory& memory, const CPythonLayout& layout, uint64_t dict, const std::string& key) {
    auto entries = readPyDict(memory, layout, dict);
    if (!entries) return std::nullopt;
    for (const auto& e : *entries)
        if (readPyUnicode(memory, layout, e.key, key.size() + 1) == key) return e.value;
    return std::nullopt;
}

std::optional<std::vector<DictEntry>> readPyDict(const Memory& memory, const CPythonLayout& layout, uint64_t dict,
                                                 size_t maxEntries, bool truncate) {
    if (!dict) return std::nullopt;
    auto keys = memory.readPointer(dict + layout.dictKeys);
    auto values = memory.readPointer(dict + layout.dictValues);
    if (!keys || !*keys || !values) return std::nullopt;
    // A split table's values (ma_values): PyObject*[] (<= 3.10) or PyDictValues (3.11+).
    uint64_t array = *values ? *values + std::max<int64_t>(layout.dictValuesValues, 0) : 0;
    return readPyDictKeys(memory, layout, *keys, array, maxEntries, truncate);
}

std::optional<std::vector<DictEntry>> readPyDictKeys(const Memory& memory, const CPythonLayout& layout, uint64_t keys,
                                                     uint64_t values, size_t maxEntries, bool truncate) {
    if (!keys) return std::nullopt;
    auto nentries = memory.readValue<int64_t>(keys + layout.dictKeysNentries);
    if (!nentries || *nentries < 0 || *nentries > (int64_t(1) << 40)) return std::nullopt;
    if (static_cast<size_t>(*nentries) > maxEntries && !truncate) return std::nullopt;
    uint64_t indexBytes = 0;
    size_t entrySize = 24, keyOffset = 8;  // PyDictKeyEntry {hash, key, value}
    if (layout.dictKeysLog2) {
        auto log2Index = memory.readValue<uint8_t>(keys + layout.dictKeysIndexBytes);
        auto kind = memory.readValue<uint8_t>(keys + layout.dictKeysKind);
        if (!log2Index || !kind || *log2Index > 40 || *kind > 2) return std::nullopt;
        indexBytes = uint64_t(1) << *log2Index;
        if (*kind != 0) {  // PyDictUnicodeEntry {key, value}
            entrySize = 16;
            keyOffset = 0;
        }
    } else {
        auto size = memory.readValue<int64_t>(keys + layout.dictKeysSize);
        if (!size || *size <= 0 || *size > (int64_t(1) << 40)) return std::nullopt;
        uint64_t width = *size <= 0xff ? 1 : *size <= 0xffff ? 2 : *size <= 0xffffffffLL ? 4 : 8;
        indexBytes = uint64_t(*size) * width;
    }
    uint64_t entries = keys + layout.dictKeysIndices + indexBytes;
    // A deleted entry has a null key: a table of mostly deleted entries is read in chunks, never
    // more than maxEntries' worth of live ones kept.
    std::vector<DictEntry> out;
    constexpr size_t kChunk = 1024;
    // A truncated read scans at most this many entries: garbage that reads as a huge table of
    // deleted entries (zero pages) ends here.
    constexpr int64_t kMaxScanned = int64_t(1) << 20;
    if (*nentries > kMaxScanned && !truncate) return std::nullopt;
    std::vector<uint8_t> raw;
    std::vector<uint64_t> vals;
    int64_t scanned = std::min(*nentries, kMaxScanned);
    for (int64_t first = 0; first < scanned && out.size() < maxEntries; first += kChunk) {
        size_t n = static_cast<size_t>(std::min<int64_t>(kChunk, scanned - first));
        raw.resize(n * entrySize);
        if (!memory.readExact(entries + first * entrySize, raw.data(), raw.size())) return std::nullopt;
        if (values) {
            vals.resize(n);
            if (!memory.readExact(values + first * 8, vals.data(), n * 8)) return std::nullopt;
        }
        for (size_t i = 0; i < n && out.size() < maxEntries; ++i) {
            DictEntry e;
            std::memcpy(&e.key, raw.data() + i * entrySize + keyOffset, 8);
            if (values) e.value = vals[i];
            else std::memcpy(&e.value, raw.data() + i * entrySize + keyOffset + 8, 8);
            if (e.key && e.value) out.push_back(e);
        }
    }
    return out;
}

std::optional<std::string> readTypeName(const Memory& memory, const CPythonLayout& layout, uint64_t object) {
    auto type = memory.readPointer(object + layout.objectType);
    if (!type || !*type) return std::nullopt;
    auto name = memory.readPointer(*type + layout.typeName);
    if (!name || !*name) return std::nullopt;
    return memory.readCString(*name, 256);
}

std::optional<std::string> readPlausibleTypeName(const Memory& memory, const CPythonLayout& layout, uint64_t object) {
    auto type = readTypeName(memory, layout, object);
    bool plausible = type && !type->empty() && type->size() < 64 &&
                     std::all_of(type->begin(), type->end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; });
    if (!plausible) return std::nullopt;
    return type;
}

}  // namespace pytstates
