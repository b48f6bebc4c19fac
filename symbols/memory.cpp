// SPDX-License-Identifier: Apache-2.0
#include "symbols/memory.h"

#include <algorithm>
#include <vector>

namespace pytstates {

std::optional<std::string> Memory::readCString(uint64_t addr, size_t maxLen) const {
    std::string out;
    char chunk[256];
    while (out.size() < maxLen) {
        // Never cross a page boundary in one read: the next page may be unmapped.
        size_t toPageEnd = 4096 - ((addr + out.size()) & 4095);
        size_t want = std::min({sizeof chunk, toPageEnd, maxLen - out.size()});
        size_t got = read(addr + out.size(), chunk, want);
        if (got == 0) return std::nullopt;
        const void* nul = std::memchr(chunk, 0, got);
        if (nul) {
            out.append(chunk, static_cast<const char*>(nul) - chunk);
            return out;
        }
        out.append(chunk, got);
        if (got < want) return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace pytstates
