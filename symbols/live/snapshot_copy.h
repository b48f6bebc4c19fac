// SPDX-License-Identifier: Apache-2.0
// The stop's snapshot (symbols/live/stop_snapshot) copied on a thread of its own, beside the rest
// of the stop: each thread's own memory as soon as the tracer has collected the thread's stop and
// read its registers, while it collects the others; the rest once every stop is collected, while
// the analysis reads the stopped process on the caller's thread. At 1,000 threads the copy takes
// about 3 ms, as long as collecting the stops; while the target is stopped a core is otherwise
// idle.
//
// Still one moment: stops are collected only once every thread has been interrupted, and an
// interrupted thread stops the next time it would return to its own code (a running one is
// kicked into the kernel at once); a thread found only by a later listing (made meanwhile) was
// not interrupted then, so the stop says so at complete() and every thread's memory is copied
// again.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "symbols/live/stop_snapshot.h"
#include "symbols/page_cache.h"

namespace pytstates {

// Threads handed from the tracer to the copier as they are stopped. The tracer may be another
// process sharing this memory (symbols/live/tracer_process): a fixed array, allocated before the
// stop, and atomics, no lock.
class StoppedThreads {
public:
    explicit StoppedThreads(size_t capacity = 0) : entries_(capacity) {}
    // Beyond the capacity a thread is left to the copy made once every thread is stopped.
    void publish(uint64_t sp, uint64_t pthread);
    void close();
    bool closed() const { return closed_.load(std::memory_order_acquire); }
    size_t published() const { return count_.load(std::memory_order_acquire); }
    // Sleeps until a batch more than `consumed` threads is published or the list is closed (at
    // most ~1 ms).
    void waitForMore(size_t consumed) const;
    struct Entry {
        uint64_t sp = 0, pthread = 0;
    };
    const Entry& at(size_t i) const { return entries_[i]; }

private:
    std::vector<Entry> entries_;
    std::atomic<uint32_t> count_{0};
    std::atomic<bool> closed_{false};
    // A futex word, counting the wake-ups: one every kWakeEvery threads published, one at close().
    std::atomic<uint32_t> wakes_{0};
};

class SnapshotCopy {
public:
    SnapshotCopy() = default;
    ~SnapshotCopy() { abandon(); }
    SnapshotCopy(const SnapshotCopy&) = delete;
    SnapshotCopy& operator=(const SnapshotCopy&) = delete;

    // Before the stop: starts the copier, which copies the memory of each thread published to
    // stopped() (by the readable mappings read before the stop) into storage's buffers. threads:
    // how many the stop expects. On this thread, at complete(), when no thread can be made.
    void start(int pid, std::vector<MappedRange> maps, size_t threads, std::vector<std::vector<unsigned char>> storage);
    StoppedThreads& stopped() { return *stopped_; }
    // Every thread is stopped: the whole snapshot's ranges, of which the copier copies what it has
    // not yet, the thread memory first; everything when the pages copied as the stops came may
    // predate the moment (streamedValid false: threads were found after the first interrupts).
    void complete(SnapshotRanges ranges, bool streamedValid);
    // The stop failed: the copier ends and what it copied is dropped.
    void abandon();
    bool pending() const { return pending_; }
    // Whether [addr, addr + len) meets the thread memory not handed over yet.
    bool reaches(uint64_t addr, uint64_t len) const;
    // Waits for the thread memory (the arguments' pages go on being copied) and hands its pages
    // over, once, put together for a PageCache on the copy's thread.
    PageCache::PinnedPages threadMemory();

    struct Result {
        PageCache::PinnedPages pages;  // those not handed over yet
        std::vector<std::vector<unsigned char>> unused;  // the buffers no page needed
        size_t calls = 0;
        std::chrono::steady_clock::time_point doneAt;  // when the last page was copied
    };
    // Waits for the whole copy (complete() must have been called); an empty result after.
    Result finish();

private:
    void copy();     // never throws: the copier's thread must not end the process
    void copyAll();
    void copyPublished(size_t& consumed, PageRanges& copied, std::vector<CopiedPage>& own);

    bool pending_ = false;   // started, not finished or abandoned
    bool completed_ = false; // complete() was called
    bool ownTaken_ = false;  // threadMemory() handed the thread memory over
    bool inline_ = false;    // no thread could be made: complete() copies
    int pid_ = 0;
    std::vector<MappedRange> maps_;
    std::optional<StoppedThreads> stopped_;
    std::thread thread_;
    std::atomic<bool> abandoned_{false};

    std::mutex mutex_;
    std::condition_variable changed_;
    std::optional<SnapshotRanges> ranges_;  // under mutex_: set by complete()
    bool streamedValid_ = true;             // under mutex_: set by complete()
    bool ownDone_ = false;                  // under mutex_: ownPages_ is complete
    PageRanges ownRanges_;                  // complete()'s thread memory, for reaches()
    PageCache::PinnedPages ownPages_;       // the copier's until ownDone_
    std::vector<std::vector<unsigned char>> storage_;  // the copier's until joined
    Result result_;                         // the copier's until joined
};

}  // namespace pytstates
