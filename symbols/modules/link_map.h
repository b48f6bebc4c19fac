// SPDX-License-Identifier: Apache-2.0
// The dynamic linker's list of loaded objects, read from target memory: auxv AT_PHDR ->
// the executable's PT_DYNAMIC -> DT_DEBUG -> r_debug -> link_map chain, and through
// r_debug_extended.r_next (glibc >= 2.35) every dlmopen namespace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbols/memory.h"

namespace pytstates {

struct LinkMapEntry {
    long ns = 0;
    uint64_t address = 0;  // the struct link_map
    uint64_t bias = 0;     // l_addr
    uint64_t dynamic = 0;  // l_ld
    std::string name;      // l_name; empty for the main executable
};

struct LinkMapResult {
    uint64_t executableBias = 0;
    uint64_t rDebug = 0;  // 0 when none (static executable, or not yet set up)
    std::vector<LinkMapEntry> entries;
    std::string note;     // why the walk stopped early, if it did
};

// phdr/phnum: AT_PHDR/AT_PHNUM from the auxiliary vector.
LinkMapResult readLinkMap(const Memory& memory, uint64_t phdr, uint64_t phnum);
// The same walk from a known &_r_debug (a program started as `ld.so PROGRAM`: AT_PHDR is then
// ld.so's, which has no DT_DEBUG; ld.so exports _r_debug).
LinkMapResult readLinkMapAt(const Memory& memory, uint64_t rDebug);
void walkNamespaces(const Memory& memory, LinkMapResult& result);

}  // namespace pytstates
