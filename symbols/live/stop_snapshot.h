// SPDX-License-Identifier: Apache-2.0
// What a live target copies while its threads are stopped, in a few batched reads, so that the
// analysis can go on after the process runs again and still see one moment: each thread's live
// stack (from below its sp to the end of its mapping, which also holds glibc's struct pthread and
// the static TLS of threads glibc made), its struct pthread, and the page its first argument
// register points into (a thread blocked on a lock passes the lock's word there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

using PageRanges = std::vector<std::pair<uint64_t, uint64_t>>;  // [start, end), page-aligned

struct MappedRange {
    uint64_t start = 0, end = 0;
};
// The readable mappings of /proc/PID/maps' text, by address (parsed before the stop: ~0.4 ms at
// 1,000 threads).
std::vector<MappedRange> readableMappings(const std::string& mapsText);

// One thread's own memory (its stack from below sp, its struct pthread), unsorted; none when its
// sp lies in no readable mapping.
void addThreadMemory(uint64_t sp, uint64_t pthread, const std::vector<MappedRange>& maps, PageRanges& out);

// What to copy for these threads of a stopped process with those readable mappings, each part
// sorted and merged: the threads' own memory (stacks, struct pthread, static TLS), which only the
// stack and thread-specific analyses read, and the pages their argument registers point into
// (heap pages, where the thread states lie too), none of them in the first part. stacksOutside,
// if given: how many threads' sp lies in no readable mapping (maps read before the stop may miss
// a new stack).
struct SnapshotRanges {
    PageRanges threadMemory;
    PageRanges arguments;
};
SnapshotRanges snapshotRanges(const std::vector<OsThread>& threads, const std::vector<MappedRange>& maps, const Arch& arch,
                              size_t* stacksOutside = nullptr);

PageRanges sortedAndMerged(PageRanges ranges);
// ranges less what `minus` covers; both sorted and merged.
PageRanges without(const PageRanges& ranges, const PageRanges& minus);

// One page copied into a buffer of its own: a buffer from a PageCache's reserve, kept by the cache
// without another copy.
struct CopiedPage {
    uint64_t base = 0;
    std::vector<unsigned char> bytes;  // 4096 bytes
};

// Reads those ranges with process_vm_readv straight into page buffers taken from storage (new ones
// when it runs short): adjacent pages in one remote iovec, one local iovec per page, at most
// kBatchPages pages a call. Appends each page read whole to out, in address order; an unreadable
// page is left out (read later, one by one) and its buffer used for the next. Returns how many
// system calls it took.
constexpr size_t kBatchPages = 1024;  // IOV_MAX: the kernel's limit on either side's iovecs
size_t readPagesInto(int pid, const PageRanges& ranges, std::vector<std::vector<unsigned char>>& storage,
                     std::vector<CopiedPage>& out);

}  // namespace pytstates
