// SPDX-License-Identifier: Apache-2.0
// What a live stop copies (symbols/live/stop_snapshot), on this test's own process: the ranges
// for a thread from its registers and /proc/self/maps, and the batched page reads, which skip an
// unreadable page and go on past it, IOV_MAX pages a call.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "symbols/live/stop_snapshot.h"
#include "symbols/page_cache.h"

using namespace pytstates;

namespace {

std::string selfMaps() {
    std::ifstream in("/proc/self/maps");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

bool covered(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t addr) {
    for (const auto& [start, end] : ranges)
        if (addr >= start && addr < end) return true;
    return false;
}

}  // namespace

TEST(StopSnapshot, RangesFromTheThreadsStackAndArgument) {
    const Arch& arch = hostArch();
    volatile char local[64] = {};  // on this thread's stack
    auto sp = reinterpret_cast<uint64_t>(&local[0]);
    static char data[8192];  // in the program's data: what a lock waiter's argument register names
    OsThread t;
    t.sp = sp;
    t.registers.assign(arch.dwarfRegisters, 0);
    t.registers[arch.machine == Machine::X86_64 ? 5 : 0] = reinterpret_cast<uint64_t>(&data[4096]);
    size_t outside = 99;
    auto ranges = snapshotRanges({t}, selfMaps(), arch, &outside);
    EXPECT_EQ(outside, 0u) << "this thread's stack is in the maps";
    EXPECT_TRUE(covered(ranges, sp)) << "the stack at sp";
    EXPECT_TRUE(covered(ranges, sp - 64)) << "the red zone below sp";
    EXPECT_TRUE(covered(ranges, reinterpret_cast<uint64_t>(&data[4096]))) << "the argument's page";
    for (const auto& [start, end] : ranges) {
        EXPECT_EQ(start % 4096, 0u);
        EXPECT_EQ(end % 4096, 0u);
        EXPECT_LT(start, end);
    }

    OsThread unmapped;  // registers pointing nowhere: nothing to copy, no error
    unmapped.sp = 8;
    unmapped.registers.assign(arch.dwarfRegisters, 16);
    EXPECT_TRUE(snapshotRanges({unmapped}, selfMaps(), arch, &outside).empty());
    EXPECT_EQ(outside, 1u) << "a stack the maps do not hold is counted: the caller reads the maps again";
}

TEST(StopSnapshot, BatchedReadsSkipAnUnreadablePage) {
    const size_t pages = 3;
    auto* area = static_cast<unsigned char*>(mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(area, MAP_FAILED);
    for (size_t i = 0; i < pages; ++i) std::memset(area + i * 4096, 'a' + static_cast<int>(i), 4096);
    ASSERT_EQ(mprotect(area + 4096, 4096, PROT_NONE), 0);
    auto base = reinterpret_cast<uint64_t>(area);
    std::map<uint64_t, unsigned char> got;
    std::vector<unsigned char> scratch;
    readPagesBatched(getpid(), {{base, base + pages * 4096}}, [&](uint64_t page, const unsigned char* bytes) {
        got[page] = bytes[0];
        EXPECT_EQ(bytes[4095], bytes[0]);
    }, scratch);
    EXPECT_EQ(got.size(), 2u);
    EXPECT_EQ(got[base], 'a');
    EXPECT_EQ(got.count(base + 4096), 0u) << "the unreadable page is skipped";
    EXPECT_EQ(got[base + 8192], 'c') << "and the read goes on after it";
    munmap(area, pages * 4096);
}

TEST(StopSnapshot, MorePagesThanOneCallTakes) {
    const size_t pages = kBatchPages + 76;
    auto* area = static_cast<unsigned char*>(mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(area, MAP_FAILED);
    for (size_t i = 0; i < pages; ++i) std::memcpy(area + i * 4096, &i, sizeof i);
    auto base = reinterpret_cast<uint64_t>(area);
    size_t seen = 0, wrong = 0;
    std::vector<unsigned char> scratch;
    size_t calls = readPagesBatched(getpid(), {{base, base + pages * 4096}}, [&](uint64_t page, const unsigned char* bytes) {
        size_t index;
        std::memcpy(&index, bytes, sizeof index);
        wrong += index != (page - base) / 4096;
        ++seen;
    }, scratch);
    EXPECT_EQ(seen, pages);
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(calls, 2u) << "kBatchPages pages a call";
    EXPECT_EQ(scratch.size(), kBatchPages * 4096) << "the buffer grows to one call's pages, no more";
    munmap(area, pages * 4096);
}

TEST(StopSnapshot, ReservedPagesHoldWhatIsInsertedAndFetched) {
    // A live target reserves page storage before the stop: pages from the reserve must hold
    // exactly what was inserted or fetched, whatever the reserve held before.
    unsigned char fetchedByte = 'f';
    PageCache cache([&](uint64_t, void* buf, size_t len) {
        std::memset(buf, fetchedByte, len);
        return len;
    });
    cache.reserve(2);
    std::vector<unsigned char> page(4096, 'i');
    cache.insert(0x10000, page.data(), 4096);
    unsigned char got[2] = {};
    ASSERT_EQ(cache.read(0x10fff, got, 2), 2u);  // the inserted page's last byte, then a fetched one
    EXPECT_EQ(got[0], 'i');
    EXPECT_EQ(got[1], 'f');
    cache.reserve(0);
    EXPECT_EQ(cache.read(0x12000, got, 1), 1u) << "pages past the reserve are allocated as before";
    EXPECT_EQ(got[0], 'f');
}
