// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/snapshot_copy.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <ctime>
#include <system_error>

namespace pytstates {

namespace {

constexpr uint32_t kWakeEvery = 32;  // threads published between two wake-ups of the copier

// A futex on a word of this address space, which the tracer process shares: private futexes are
// keyed by the address space, not the process.
void futexWake(const std::atomic<uint32_t>* word) {
    syscall(SYS_futex, reinterpret_cast<const uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void futexWait(const std::atomic<uint32_t>* word, uint32_t expected) {
    timespec timeout{0, 1000000};  // a wake-up missed is never waited for long
    syscall(SYS_futex, reinterpret_cast<const uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &timeout, nullptr, 0);
}

PageCache::PinnedPages pinned(std::vector<CopiedPage>& pages) {
    PageCache::PinnedPages out;
    out.reserve(pages.size());
    for (auto& page : pages) out.add(page.base, std::move(page.bytes), page.bytes.size());
    return out;
}

}  // namespace

void StoppedThreads::publish(uint64_t sp, uint64_t pthread) {
    uint32_t i = count_.load(std::memory_order_relaxed);
    if (i >= entries_.size()) return;
    entries_[i] = Entry{sp, pthread};
    count_.store(i + 1, std::memory_order_release);  // the entry is written before it is counted
    if ((i + 1) % kWakeEvery == 0) {
        wakes_.fetch_add(1, std::memory_order_release);
        futexWake(&wakes_);
    }
}

void StoppedThreads::close() {
    closed_.store(true, std::memory_order_release);
    wakes_.fetch_add(1, std::memory_order_release);
    futexWake(&wakes_);
}

void StoppedThreads::waitForMore(size_t consumed) const {
    // The count of wake-ups read first: one that comes after it makes the wait return at once.
    uint32_t wakes = wakes_.load(std::memory_order_acquire);
    if (closed() || published() >= consumed + kWakeEvery) return;
    futexWait(&wakes_, wakes);
}

void SnapshotCopy::start(int pid, std::vector<MappedRange> maps, size_t threads, std::vector<std::vector<unsigned char>> storage) {
    abandon();
    pid_ = pid;
    maps_ = std::move(maps);
    stopped_.emplace(threads);
    storage_ = std::move(storage);
    result_ = Result{};
    ranges_.reset();
    ownRanges_.clear();
    ownPages_ = PageCache::PinnedPages{};
    ownDone_ = completed_ = ownTaken_ = inline_ = false;
    abandoned_ = false;
    pending_ = true;
    try {
        thread_ = std::thread([this] { copy(); });
    } catch (const std::system_error&) {
        inline_ = true;
    }
}

void SnapshotCopy::complete(SnapshotRanges ranges, bool streamedValid) {
    if (!pending_ || completed_) return;
    completed_ = true;
    stopped_->close();
    ownRanges_ = ranges.threadMemory;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ranges_ = std::move(ranges);
        streamedValid_ = streamedValid;
    }
    changed_.notify_all();
    if (inline_) copy();
}

// Copies what the stop publishes, as it comes, in batches; what it copied is in `copied`.
void SnapshotCopy::copyPublished(size_t& consumed, PageRanges& copied, std::vector<CopiedPage>& own) {
    size_t available = stopped_->published();
    if (available == consumed) return;
    PageRanges batch;
    for (; consumed < available; ++consumed) addThreadMemory(stopped_->at(consumed).sp, stopped_->at(consumed).pthread, maps_, batch);
    batch = without(sortedAndMerged(std::move(batch)), sortedAndMerged(copied));
    result_.calls += readPagesInto(pid_, batch, storage_, own);
    copied.insert(copied.end(), batch.begin(), batch.end());
}

void SnapshotCopy::copy() {
    try {
        copyAll();
    } catch (...) {  // out of memory: what was not copied is read when asked for, like an unreadable page
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ownDone_ = true;
        }
        changed_.notify_all();
        result_.doneAt = std::chrono::steady_clock::now();
    }
}

void SnapshotCopy::copyAll() {
    std::vector<CopiedPage> own, arguments;
    PageRanges copied;
    size_t consumed = 0;
    // While the tracer stops the threads: each one's memory as soon as it is published.
    for (;;) {
        if (abandoned_) return;
        bool closed = stopped_->closed();  // read before the count: nothing is published after
        copyPublished(consumed, copied, own);
        if (closed) break;
        stopped_->waitForMore(consumed);
    }
    SnapshotRanges ranges;
    bool streamedValid = true;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return ranges_.has_value() || abandoned_; });
        if (abandoned_) return;
        ranges = *ranges_;
        streamedValid = streamedValid_;
    }
    if (!streamedValid) {  // copied again, now that every thread is stopped
        for (auto& page : own) storage_.push_back(std::move(page.bytes));
        own.clear();
        copied.clear();
    }
    // The rest of the thread memory (threads not published, maps read again), then the arguments.
    result_.calls += readPagesInto(pid_, without(ranges.threadMemory, sortedAndMerged(copied)), storage_, own);
    PageCache::PinnedPages ownPinned = pinned(own);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ownPages_ = std::move(ownPinned);
        ownDone_ = true;
    }
    changed_.notify_all();
    result_.calls += readPagesInto(pid_, ranges.arguments, storage_, arguments);
    result_.pages = pinned(arguments);
    result_.doneAt = std::chrono::steady_clock::now();
}

bool SnapshotCopy::reaches(uint64_t addr, uint64_t len) const {
    if (!pending_ || ownTaken_ || len == 0) return false;
    // Before complete() nothing is read of the process; after it, the first range ending after
    // addr (the ranges are sorted and do not overlap).
    auto it = std::upper_bound(ownRanges_.begin(), ownRanges_.end(), addr,
                               [](uint64_t a, const std::pair<uint64_t, uint64_t>& r) { return a < r.second; });
    return it != ownRanges_.end() && it->first < addr + len;
}

PageCache::PinnedPages SnapshotCopy::threadMemory() {
    if (!pending_ || !completed_ || ownTaken_) return {};
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return ownDone_; });
    ownTaken_ = true;
    return std::move(ownPages_);
}

SnapshotCopy::Result SnapshotCopy::finish() {
    if (!pending_) return {};
    if (!completed_) {  // nothing to wait for: the stop never completed
        abandon();
        return {};
    }
    if (thread_.joinable()) thread_.join();
    pending_ = false;
    Result done = std::move(result_);
    result_ = Result{};
    if (!ownTaken_) done.pages.merge(std::move(ownPages_));
    ownPages_ = PageCache::PinnedPages{};
    for (auto& b : storage_) done.unused.push_back(std::move(b));
    storage_.clear();
    return done;
}

void SnapshotCopy::abandon() {
    if (!pending_) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        abandoned_ = true;
    }
    changed_.notify_all();
    if (stopped_) stopped_->close();  // wakes the copier if it waits for threads
    if (thread_.joinable()) thread_.join();
    pending_ = false;
    result_ = Result{};
    ownPages_ = PageCache::PinnedPages{};
    storage_.clear();
}

}  // namespace pytstates
