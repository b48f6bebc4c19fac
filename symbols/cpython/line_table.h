// SPDX-License-Identifier: Apache-2.0
// Line numbers from a code object's line table, one decoder per format. Pure functions over
// bytes, so they are tested without a process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pytstates {

// 3.8, 3.9: co_lnotab pairs (address increment, signed line increment). offset in bytes.
int lineFromLnotab(const std::vector<uint8_t>& table, int firstLine, int offset);
// 3.10: co_linetable pairs (address delta, signed line delta; -128 = no line). offset in bytes.
int lineFromLinetable310(const std::vector<uint8_t>& table, int firstLine, int offset);
// 3.11+: the location table of PEP 657 (Objects/locations.md). offset in bytes.
int lineFromLocationTable(const std::vector<uint8_t>& table, int firstLine, int offset);

// An instruction's whole position, as code.co_positions() gives it: lines 1-based, columns 0-based
// (UTF-8 byte offsets into the line); -1 where the table says none.
struct LinePosition {
    int line = -1, endLine = -1, column = -1, endColumn = -1;
};
LinePosition positionFromLocationTable(const std::vector<uint8_t>& table, int firstLine, int offset);

}  // namespace pytstates
