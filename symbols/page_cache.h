// SPDX-License-Identifier: Apache-2.0
// Page-granular cache in front of an expensive memory source (a debugger's API, a syscall per
// read, a file read with pread): the analyses read many small fields close together. Bounded: the
// least recently used pages go first, so a huge core never costs more than `capacity` pages.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>
#include <vector>

namespace pytstates {

class PageCache {
public:
    using Fetch = std::function<size_t(uint64_t addr, void* buf, size_t len)>;
    static constexpr size_t kDefaultCapacity = 2048;  // pages: 8 MiB
    explicit PageCache(Fetch fetch, size_t capacity = kDefaultCapacity) : fetch_(std::move(fetch)), capacity_(capacity) {}

    size_t read(uint64_t addr, void* buf, size_t len) const;
    void clear() {
        forgetLast();
        pages_.clear();
        order_.clear();
        pinned_.clear();
    }
    // How many pages the LRU part keeps (a live target keeps every page it reads while stopped).
    void setCapacity(size_t capacity) { capacity_ = capacity; }
    // Every page held now is kept for good and answers before any fetch (a live target's
    // snapshot, taken while stopped, once the process runs again).
    void pinAll();
    // Storage for that many more pages, allocated and touched now, so that the pages read or
    // fetched next cost no allocation and no page fault (a live target's, while it is stopped);
    // reserve(0) frees what is left of it.
    void reserve(size_t pages);
    // Page buffers from the reserve (new ones when it runs short) to read into elsewhere, and
    // buffers handed back unused.
    std::vector<std::vector<unsigned char>> takeStorage(size_t pages);
    void returnStorage(std::vector<std::vector<unsigned char>> buffers);
    // A page read into one of those buffers (a batch of reads), kept like a fetched one without
    // a copy. valid: readable bytes. A page held already stays as it is (the same moment's
    // bytes) and the buffer returns to the reserve.
    void adopt(uint64_t base, std::vector<unsigned char> bytes, size_t valid);
    bool cached(uint64_t addr) const;
    size_t fetches() const { return fetches_; }

private:
    static constexpr uint64_t kPage = 4096;
    struct Page {
        size_t valid = 0;  // readable bytes from the page start
        std::vector<unsigned char> bytes;
        std::list<uint64_t>::iterator use;  // its place in order_
    };

public:
    // Pages read and put together elsewhere (on another thread, while this cache is in use):
    // handed over whole with pin(), at no cost to the thread that reads the cache.
    class PinnedPages {
    public:
        void reserve(size_t pages) { pages_.reserve(pages); }
        void add(uint64_t base, std::vector<unsigned char> bytes, size_t valid);
        void merge(PinnedPages other) { pages_.merge(other.pages_); }
        size_t size() const { return pages_.size(); }

    private:
        friend class PageCache;
        std::unordered_map<uint64_t, Page> pages_;
    };
    // Kept for good like pinAll()'s pages, answering before any fetch; a page pinned already stays
    // as it is (the same moment's bytes).
    void pin(PinnedPages pages);

private:
    const Page& page(uint64_t base) const;
    std::vector<unsigned char> storage() const;  // one page's bytes, from the reserve if any
    void forgetLast() const { last_ = nullptr; }

    // The page read last: most reads (a stack walk's words, a struct's fields) land in the page
    // before, which is then first in the LRU order already and needs no lookup.
    mutable uint64_t lastBase_ = 0;
    mutable const Page* last_ = nullptr;

    Fetch fetch_;
    size_t capacity_;
    mutable std::unordered_map<uint64_t, Page> pages_;
    std::unordered_map<uint64_t, Page> pinned_;
    mutable std::list<uint64_t> order_;  // page bases, most recently used first
    mutable size_t fetches_ = 0;
    mutable std::vector<std::vector<unsigned char>> spare_;  // reserve()d page storage
};

}  // namespace pytstates
