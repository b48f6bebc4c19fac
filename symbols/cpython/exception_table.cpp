// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/exception_table.h"

namespace pytstates {

namespace {

// One varint at `at`; false at the table's end or on a value too large for a code object.
bool varint(const std::vector<uint8_t>& t, size_t& at, uint32_t& out) {
    if (at >= t.size()) return false;
    uint8_t b = t[at++];
    uint64_t v = b & 63;
    while (b & 64) {
        if (at >= t.size() || v > (uint64_t(1) << 32)) return false;
        b = t[at++];
        v = (v << 6) | (b & 63);
    }
    if (v > 0xffffffffu) return false;
    out = static_cast<uint32_t>(v);
    return true;
}

}  // namespace

std::vector<ExceptionEntry> parseExceptionTable(const std::vector<uint8_t>& table) {
    std::vector<ExceptionEntry> entries;
    size_t at = 0;
    while (at < table.size()) {
        if (!(table[at] & 128)) break;  // not an entry's first byte: not a table we can read
        uint32_t start, size, target, depthLasti;
        if (!varint(table, at, start) || !varint(table, at, size) || !varint(table, at, target) || !varint(table, at, depthLasti))
            break;
        if (uint64_t(start) + size > 0xffffffffu) break;
        entries.push_back({start, start + size, target, depthLasti >> 1, (depthLasti & 1) != 0});
    }
    return entries;
}

std::optional<ExceptionEntry> handlerAt(const std::vector<ExceptionEntry>& entries, uint32_t index) {
    for (const auto& e : entries) {
        if (e.start > index) break;
        if (index < e.end) return e;
    }
    return std::nullopt;
}

}  // namespace pytstates
