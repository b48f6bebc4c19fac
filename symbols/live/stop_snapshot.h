// SPDX-License-Identifier: Apache-2.0
// What a live target copies while its threads are stopped, in a few batched reads, so that the
// analysis can go on after the process runs again and still see one moment: each thread's live
// stack (from below its sp to the end of its mapping, which also holds glibc's struct pthread and
// the static TLS of threads glibc made), its struct pthread, and the page its first argument
// register points into (a thread blocked on a lock passes the lock's word there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

// Page-aligned [start, end) ranges, sorted and merged, for these threads of a stopped process
// whose mappings are in mapsText (/proc/PID/maps). stacksOutside, if given: how many threads'
// sp lies in no readable mapping of mapsText (maps read before the stop may miss a new stack).
std::vector<std::pair<uint64_t, uint64_t>> snapshotRanges(const std::vector<OsThread>& threads, const std::string& mapsText,
                                                          const Arch& arch, size_t* stacksOutside = nullptr);

// Reads those ranges with process_vm_readv, adjacent pages in one remote iovec; calls page(base, bytes)
// for each page read whole (4096 bytes). An unreadable page is skipped (read later, one by one).
// Returns how many system calls it took. scratch: the buffer it reads into, grown to at most
// kBatchPages pages (the caller can allocate it before the stop).
constexpr size_t kBatchPages = 256;
size_t readPagesBatched(int pid, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                        const std::function<void(uint64_t base, const unsigned char* bytes)>& page,
                        std::vector<unsigned char>& scratch);

}  // namespace pytstates
