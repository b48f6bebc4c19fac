// SPDX-License-Identifier: Apache-2.0
// glibc malloc's traces in freed memory: what a pointer to a freed small block looks like.
#pragma once

#include <cstdint>

#include "symbols/memory.h"

namespace pytstates {

// True when the 16 bytes at p read as a tcache free-list entry (glibc >= 2.32): a next pointer
// protected by (p >> 12) that decodes to NULL or a nearby aligned block, then a non-zero key.
bool looksLikeFreedTcacheEntry(const Memory& memory, uint64_t p);

// True when the block at p is a free chunk in one of malloc's bins (too big for, or not taken by,
// the tcache), alone or merged into a free chunk before it: the next chunk's PREV_INUSE bit is
// clear and its prev_size is at least this chunk's size.
bool looksLikeFreedBinChunk(const Memory& memory, uint64_t p);

}  // namespace pytstates
