// SPDX-License-Identifier: Apache-2.0
// glibc malloc's traces in freed memory, read from this test's own heap (the real glibc malloc of
// the machine): blocks freed into the tcache, blocks freed into a bin once the tcache is full, a
// block merged into its free neighbour, and blocks still in use.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "symbols/glibc/malloc_chunk.h"

#include "tests/unit/own_memory.h"

using namespace pytstates;

namespace {

constexpr size_t kBlock = 0x160;  // a CPython 3.11 thread state's size class
constexpr int kTcacheSlots = 7;   // glibc's default tcache_count

uint64_t at(void* p) { return reinterpret_cast<uint64_t>(p); }

// Blocks of one size with an in-use guard after each, so that freeing one merges with nothing.
struct Blocks {
    std::vector<void*> blocks, guards;
    explicit Blocks(int n) {
        for (int i = 0; i < n; ++i) {
            blocks.push_back(std::malloc(kBlock));
            std::memset(blocks.back(), 0x63, kBlock);
            guards.push_back(std::malloc(kBlock));
            std::memset(guards.back(), 0x64, kBlock);
        }
    }
    ~Blocks() {
        for (void* g : guards) std::free(g);
    }
};

TEST(MallocChunk, InUseBlocksAreNotFree) {
    OwnMemory mem;
    Blocks b(2);
    for (void* p : b.blocks) {
        EXPECT_FALSE(looksLikeFreedTcacheEntry(mem, at(p)));
        EXPECT_FALSE(looksLikeFreedBinChunk(mem, at(p)));
    }
    for (void* p : b.blocks) std::free(p);
}

TEST(MallocChunk, TcacheThenBin) {
    OwnMemory mem;
    // The tcache bin for this size may already hold blocks freed earlier in this process: take
    // them first (a block from the tcache may follow a free chunk it was never merged with, and
    // would merge with it when freed into a bin), and fill the bin with them after, so that the
    // blocks under test go where the count says.
    std::vector<void*> fill;
    for (int i = 0; i < kTcacheSlots; ++i) fill.push_back(std::malloc(kBlock));
    Blocks b(kTcacheSlots + 2);
    std::vector<uint64_t> fillAt, freedAt{at(b.blocks[0]), at(b.blocks[1])};
    for (void* p : fill) fillAt.push_back(at(p));
    for (void* p : fill) std::free(p);  // the tcache bin is now full
    std::free(b.blocks[0]);
    std::free(b.blocks[1]);
    for (uint64_t p : freedAt) {
        EXPECT_TRUE(looksLikeFreedBinChunk(mem, p)) << std::hex << p;
        EXPECT_FALSE(looksLikeFreedTcacheEntry(mem, p)) << std::hex << p;
    }
    for (uint64_t p : fillAt) EXPECT_TRUE(looksLikeFreedTcacheEntry(mem, p));
    for (void* g : b.guards) EXPECT_FALSE(looksLikeFreedBinChunk(mem, at(g)));
    for (size_t i = 2; i < b.blocks.size(); ++i) std::free(b.blocks[i]);
}

TEST(MallocChunk, MergedIntoItsFreeNeighbour) {
    OwnMemory mem;
    std::vector<void*> fill;
    for (int i = 0; i < kTcacheSlots; ++i) fill.push_back(std::malloc(kBlock));
    void* first = std::malloc(kBlock);
    void* second = std::malloc(kBlock);
    void* guard = std::malloc(kBlock);
    const uint64_t firstAt = at(first), secondAt = at(second);  // addresses kept, not the freed pointers
    for (void* p : fill) std::free(p);
    std::free(first);
    std::free(second);  // merged backwards into first's chunk: its own header is stale
    EXPECT_TRUE(looksLikeFreedBinChunk(mem, firstAt));
    EXPECT_TRUE(looksLikeFreedBinChunk(mem, secondAt));
    EXPECT_FALSE(looksLikeFreedBinChunk(mem, at(guard)));
    std::free(guard);
}

}  // namespace
