// SPDX-License-Identifier: Apache-2.0
// What a live stop copies (symbols/live/stop_snapshot), on this test's own process: the ranges
// for a thread from its registers and /proc/self/maps, the batched page reads, which skip an
// unreadable page and go on past it, IOV_MAX pages a call, and the copy on a thread of its own.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <map>
#include <vector>

#include "symbols/live/process_files.h"
#include "symbols/live/snapshot_copy.h"
#include "symbols/live/stop_snapshot.h"
#include "symbols/page_cache.h"

using namespace pytstates;

namespace {

std::vector<MappedRange> selfMaps() { return readableMappings(readProcText("/proc/self/maps")); }

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
    EXPECT_TRUE(covered(ranges.threadMemory, sp)) << "the stack at sp";
    EXPECT_TRUE(covered(ranges.threadMemory, sp - 64)) << "the red zone below sp";
    EXPECT_TRUE(covered(ranges.arguments, reinterpret_cast<uint64_t>(&data[4096]))) << "the argument's page";
    EXPECT_FALSE(covered(ranges.threadMemory, reinterpret_cast<uint64_t>(&data[4096]))) << "apart from the thread's memory";
    for (const auto* part : {&ranges.threadMemory, &ranges.arguments})
        for (const auto& [start, end] : *part) {
            EXPECT_EQ(start % 4096, 0u);
            EXPECT_EQ(end % 4096, 0u);
            EXPECT_LT(start, end);
        }

    OsThread onItsStack = t;  // a lock on the waiter's own stack: copied once, as thread memory
    onItsStack.registers[arch.machine == Machine::X86_64 ? 5 : 0] = sp + 32;
    auto own = snapshotRanges({onItsStack}, selfMaps(), arch);
    EXPECT_TRUE(covered(own.threadMemory, sp + 32));
    EXPECT_TRUE(own.arguments.empty()) << "no page in both parts";

    OsThread unmapped;  // registers pointing nowhere: nothing to copy, no error
    unmapped.sp = 8;
    unmapped.registers.assign(arch.dwarfRegisters, 16);
    auto none = snapshotRanges({unmapped}, selfMaps(), arch, &outside);
    EXPECT_TRUE(none.threadMemory.empty() && none.arguments.empty());
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
    std::vector<std::vector<unsigned char>> storage(pages, std::vector<unsigned char>(4096));
    std::vector<CopiedPage> copied;
    readPagesInto(getpid(), {{base, base + pages * 4096}}, storage, copied);
    for (const auto& page : copied) {
        ASSERT_EQ(page.bytes.size(), 4096u);
        got[page.base] = page.bytes[0];
        EXPECT_EQ(page.bytes[4095], page.bytes[0]);
    }
    EXPECT_EQ(got.size(), 2u);
    EXPECT_EQ(got[base], 'a');
    EXPECT_EQ(got.count(base + 4096), 0u) << "the unreadable page is skipped";
    EXPECT_EQ(got[base + 8192], 'c') << "and the read goes on after it";
    EXPECT_EQ(storage.size(), 1u) << "the skipped page's buffer is handed back";
    munmap(area, pages * 4096);
}

TEST(StopSnapshot, MorePagesThanOneCallTakes) {
    const size_t pages = kBatchPages + 76;
    auto* area = static_cast<unsigned char*>(mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(area, MAP_FAILED);
    for (size_t i = 0; i < pages; ++i) std::memcpy(area + i * 4096, &i, sizeof i);
    auto base = reinterpret_cast<uint64_t>(area);
    size_t wrong = 0;
    std::vector<std::vector<unsigned char>> storage(10, std::vector<unsigned char>(4096));  // fewer than needed
    std::vector<CopiedPage> copied;
    size_t calls = readPagesInto(getpid(), {{base, base + pages * 4096}}, storage, copied);
    for (const auto& page : copied) {
        size_t index;
        std::memcpy(&index, page.bytes.data(), sizeof index);
        wrong += index != (page.base - base) / 4096;
    }
    EXPECT_EQ(copied.size(), pages);
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(calls, 2u) << "kBatchPages pages a call";
    EXPECT_TRUE(storage.empty()) << "every buffer was used, and the missing ones made";
    munmap(area, pages * 4096);
}

TEST(StopSnapshot, CopyOnItsOwnThreadHoldsTheRangesUntilFinished) {
    // 40 readable pages between two unreadable ones: a mapping of their own.
    const size_t pages = 40;
    auto* guard = static_cast<unsigned char*>(mmap(nullptr, (pages + 2) * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(guard, MAP_FAILED);
    ASSERT_EQ(mprotect(guard, 4096, PROT_NONE), 0);
    ASSERT_EQ(mprotect(guard + (pages + 1) * 4096, 4096, PROT_NONE), 0);
    unsigned char* area = guard + 4096;
    for (size_t i = 0; i < pages; ++i) std::memset(area + i * 4096, static_cast<int>(i), 4096);
    auto base = reinterpret_cast<uint64_t>(area);
    SnapshotCopy copy;
    copy.start(getpid(), selfMaps(), 4, std::vector<std::vector<unsigned char>>(35, std::vector<unsigned char>(4096)));
    // A thread stopped with its sp in page 30: its stack, pages 29 (the red zone) to 39, is
    // copied before the stop is complete.
    copy.stopped().publish(base + 30 * 4096 + 64, 0);
    EXPECT_FALSE(copy.reaches(base, 8)) << "nothing is read of the process before the stop is complete";
    // The whole snapshot: thread memory in two ranges with a gap of 10 pages, then arguments' pages.
    SnapshotRanges ranges;
    ranges.threadMemory = {{base, base + 10 * 4096}, {base + 20 * 4096, base + 40 * 4096}};
    ranges.arguments = {{base + 12 * 4096, base + 14 * 4096}};
    copy.complete(ranges, true);
    EXPECT_TRUE(copy.pending());
    EXPECT_TRUE(copy.reaches(base + 9 * 4096 + 4095, 1));
    EXPECT_FALSE(copy.reaches(base + 10 * 4096, 10 * 4096)) << "the gap is not the thread memory";
    EXPECT_TRUE(copy.reaches(base + 19 * 4096, 4097)) << "a read that ends in a range reaches it";
    EXPECT_FALSE(copy.reaches(base + 12 * 4096, 8)) << "the arguments' pages are not waited for";
    PageCache::PinnedPages own = copy.threadMemory();
    EXPECT_EQ(own.size(), 30u) << "the thread memory, handed over first";
    EXPECT_FALSE(copy.reaches(base, 8)) << "nothing to wait for once handed over";
    EXPECT_EQ(copy.threadMemory().size(), 0u) << "once";
    SnapshotCopy::Result result = copy.finish();
    EXPECT_FALSE(copy.pending());
    EXPECT_EQ(result.pages.size(), 2u) << "the arguments' pages";
    EXPECT_EQ(result.calls, 3u) << "the published thread's stack, the rest of the thread memory, the arguments";
    EXPECT_EQ(copy.finish().pages.size(), 0u) << "the pages are handed over once";

    // In a cache, the copied pages answer with the bytes of their own page; the rest is fetched.
    PageCache cache([](uint64_t, void* buf, size_t len) {
        std::memset(buf, 0xee, len);
        return len;
    });
    cache.pin(std::move(own));
    cache.pin(std::move(result.pages));
    for (size_t i = 0; i < pages; ++i) {
        unsigned char byte = 0;
        ASSERT_EQ(cache.read(base + i * 4096 + 100, &byte, 1), 1u);
        bool copied = i < 10 || i >= 20 || i == 12 || i == 13;
        EXPECT_EQ(byte, copied ? i : 0xee) << "page " << i;
    }
    EXPECT_EQ(cache.fetches(), 8u) << "only the pages outside the snapshot were fetched";

    SnapshotCopy whole;  // finished without asking for the thread memory: every page at the end
    whole.start(getpid(), selfMaps(), 0, {});
    whole.complete(ranges, true);
    EXPECT_EQ(whole.finish().pages.size(), 32u);

    SnapshotCopy again;  // threads were found after the first interrupts: the stack is copied again
    again.start(getpid(), selfMaps(), 4, {});
    again.stopped().publish(base + 30 * 4096 + 64, 0);
    again.complete(ranges, false);
    SnapshotCopy::Result all = again.finish();
    EXPECT_EQ(all.pages.size(), 32u);
    EXPECT_EQ(all.calls, 3u) << "the published stack, then the whole thread memory in one call, the arguments";

    SnapshotCopy abandoned;  // a stop that failed: nothing to wait for, nothing kept
    abandoned.start(getpid(), selfMaps(), 4, {});
    abandoned.stopped().publish(base + 30 * 4096, 0);
    abandoned.abandon();
    EXPECT_FALSE(abandoned.pending());
    EXPECT_EQ(abandoned.finish().pages.size(), 0u);
    munmap(guard, (pages + 2) * 4096);
}

TEST(StopSnapshot, ReservedPagesHoldWhatIsAdoptedAndFetched) {
    // A live target reserves page storage before the stop: pages from the reserve must hold
    // exactly what was read into them or fetched, whatever the reserve held before.
    unsigned char fetchedByte = 'f';
    PageCache cache([&](uint64_t, void* buf, size_t len) {
        std::memset(buf, fetchedByte, len);
        return len;
    });
    cache.reserve(3);
    auto buffers = cache.takeStorage(1);
    ASSERT_EQ(buffers.size(), 1u);
    ASSERT_EQ(buffers[0].size(), 4096u);
    std::memset(buffers[0].data(), 'i', 4096);
    cache.adopt(0x10000, std::move(buffers[0]), 4096);
    unsigned char got[2] = {};
    ASSERT_EQ(cache.read(0x10fff, got, 2), 2u);  // the adopted page's last byte, then a fetched one
    EXPECT_EQ(got[0], 'i');
    EXPECT_EQ(got[1], 'f');
    cache.reserve(0);
    EXPECT_EQ(cache.read(0x12000, got, 1), 1u) << "pages past the reserve are allocated as before";
    EXPECT_EQ(got[0], 'f');
}

TEST(StopSnapshot, AdoptedPagesKeepWhatWasReadFirst) {
    PageCache cache([](uint64_t, void* buf, size_t len) {
        std::memset(buf, 'f', len);
        return len;
    });
    unsigned char got = 0;
    ASSERT_EQ(cache.read(0x20000, &got, 1), 1u);  // fetched before the copy came in
    auto buffers = cache.takeStorage(2);
    ASSERT_EQ(buffers.size(), 2u);
    std::memset(buffers[0].data(), 'c', 4096);
    std::memset(buffers[1].data(), 'c', 4096);
    cache.adopt(0x20000, std::move(buffers[0]), 4096);
    cache.adopt(0x21000, std::move(buffers[1]), 4096);
    ASSERT_EQ(cache.read(0x20000, &got, 1), 1u);
    EXPECT_EQ(got, 'f') << "a page held already stays";
    ASSERT_EQ(cache.read(0x21fff, &got, 1), 1u);
    EXPECT_EQ(got, 'c') << "an adopted page answers like an inserted one";
    EXPECT_EQ(cache.fetches(), 1u) << "no fetch for the adopted page";
}
