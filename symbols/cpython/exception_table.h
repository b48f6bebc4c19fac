// SPDX-License-Identifier: Apache-2.0
// A code object's exception table (co_exceptiontable, CPython 3.11+): which handler covers each
// instruction, and at what stack depth. Format: Objects/exception_handling_notes.txt — entries of
// four varints (start, size, target, depth << 1 | lasti), 6 bits a byte, big-endian, bit 6 set
// on every byte but an entry's last, bit 7 on an entry's first byte. Units are code units.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace pytstates {

struct ExceptionEntry {
    uint32_t start = 0;  // first code unit covered
    uint32_t end = 0;    // one past the last
    uint32_t target = 0; // the handler's first code unit
    uint32_t depth = 0;  // the value stack's depth the handler starts from (before lasti and the exception)
    bool lasti = false;  // the handler is given the raising instruction's offset (with-blocks, cleanups)
};

// Every entry, in the table's order (sorted by start); a table that ends mid-entry or holds an
// entry out of bounds ends the list there.
std::vector<ExceptionEntry> parseExceptionTable(const std::vector<uint8_t>& table);

// The innermost handler covering code unit `index`: the first entry whose range holds it, as
// CPython's get_exception_handler() finds it.
std::optional<ExceptionEntry> handlerAt(const std::vector<ExceptionEntry>& entries, uint32_t index);

}  // namespace pytstates
