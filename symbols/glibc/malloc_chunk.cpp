#include "symbols/glibc/malloc_chunk.h"

namespace pytstates {

bool looksLikeFreedTcacheEntry(const Memory& memory, uint64_t p) {
    uint64_t q[2];
    if (!memory.readExact(p, q, sizeof q)) return false;
    uint64_t next = q[0] ^ (p >> 12);  // safe-linking (glibc 2.32)
    bool nextPlausible = next == 0 || ((next & 15) == 0 && (next >> 32) == (p >> 32));
    return nextPlausible && q[1] != 0 && q[1] != p;
}

}  // namespace pytstates
