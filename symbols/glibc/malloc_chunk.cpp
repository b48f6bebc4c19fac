// SPDX-License-Identifier: Apache-2.0
#include "symbols/glibc/malloc_chunk.h"

namespace pytstates {

bool looksLikeFreedTcacheEntry(const Memory& memory, uint64_t p) {
    uint64_t q[2];
    if (!memory.readExact(p, q, sizeof q)) return false;
    uint64_t next = q[0] ^ (p >> 12);  // safe-linking (glibc 2.32)
    bool nextPlausible = next == 0 || ((next & 15) == 0 && (next >> 32) == (p >> 32));
    return nextPlausible && q[1] != 0 && q[1] != p;
}

bool looksLikeFreedBinChunk(const Memory& memory, uint64_t p) {
    constexpr uint64_t kPrevInUse = 1, kMmapped = 2, kFlags = 7;
    uint64_t size = 0;
    if (p < 16 || !memory.readExact(p - 8, &size, sizeof size)) return false;
    uint64_t bytes = size & ~kFlags;
    // A chunk of a sane size, not mmapped (those are unmapped when freed, never binned).
    if ((size & kMmapped) || bytes < 32 || (bytes & 15) || bytes > (64u << 20)) return false;
    uint64_t nextSize = 0;
    if (!memory.readExact(p - 16 + bytes + 8, &nextSize, sizeof nextSize)) return false;
    // The next chunk says its predecessor is free, and its prev_size (the free chunk's footer)
    // holds that chunk's size: this chunk's own, or more when it was merged into a free chunk
    // before it (whose header then leads; the one at p - 8 is left as it was).
    uint64_t footer = 0;
    return !(nextSize & kPrevInUse) && memory.readExact(p - 16 + bytes, &footer, sizeof footer) && footer >= bytes &&
           (footer & 15) == 0 && footer <= (64u << 20);
}

}  // namespace pytstates
