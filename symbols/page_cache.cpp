// SPDX-License-Identifier: Apache-2.0
#include "symbols/page_cache.h"

#include <algorithm>
#include <cstring>

namespace pytstates {

const PageCache::Page& PageCache::page(uint64_t base) const {
    if (last_ && lastBase_ == base) return *last_;
    lastBase_ = base;
    if (!pinned_.empty()) {
        auto pin = pinned_.find(base);
        if (pin != pinned_.end()) return *(last_ = &pin->second);
    }
    auto it = pages_.find(base);
    if (it != pages_.end()) {
        order_.splice(order_.begin(), order_, it->second.use);
        return *(last_ = &it->second);
    }
    ++fetches_;
    if (pages_.size() >= capacity_ && !order_.empty()) {
        // Full: the least recently used page's node, list entry and bytes take the new page (a
        // thousand threads' stacks read through 8 MiB evict thousands of pages).
        auto node = pages_.extract(order_.back());
        order_.splice(order_.begin(), order_, node.mapped().use);
        order_.front() = base;
        node.key() = base;
        Page& p = node.mapped();
        p.valid = fetch_ ? fetch_(base, p.bytes.data(), kPage) : 0;
        return *(last_ = &pages_.insert(std::move(node)).position->second);
    }
    Page p;
    p.bytes = storage();
    p.valid = fetch_ ? fetch_(base, p.bytes.data(), kPage) : 0;
    order_.push_front(base);
    p.use = order_.begin();
    return *(last_ = &pages_.emplace(base, std::move(p)).first->second);
}

std::vector<unsigned char> PageCache::storage() const {
    if (spare_.empty()) return std::vector<unsigned char>(kPage);
    std::vector<unsigned char> bytes = std::move(spare_.back());
    spare_.pop_back();
    return bytes;
}

void PageCache::reserve(size_t pages) {
    if (pages == 0) {
        spare_.clear();
        spare_.shrink_to_fit();
        return;
    }
    spare_.reserve(spare_.size() + pages);
    for (size_t i = 0; i < pages; ++i) spare_.emplace_back(kPage);  // zeroed: touched
    pages_.reserve(pages_.size() + pages);
}

std::vector<std::vector<unsigned char>> PageCache::takeStorage(size_t pages) {
    std::vector<std::vector<unsigned char>> out;
    out.reserve(pages);
    while (out.size() < pages) out.push_back(storage());
    return out;
}

void PageCache::returnStorage(std::vector<std::vector<unsigned char>> buffers) {
    for (auto& b : buffers) spare_.push_back(std::move(b));
}

void PageCache::adopt(uint64_t base, std::vector<unsigned char> bytes, size_t valid) {
    if (pinned_.count(base) || pages_.count(base)) {
        spare_.push_back(std::move(bytes));
        return;
    }
    forgetLast();
    if (pages_.size() >= capacity_ && !order_.empty()) {  // the least recently used page's bytes go back to the reserve
        auto oldest = pages_.find(order_.back());
        spare_.push_back(std::move(oldest->second.bytes));
        pages_.erase(oldest);
        order_.pop_back();
    }
    order_.push_front(base);
    Page& p = pages_.emplace(base, Page{}).first->second;
    p.use = order_.begin();
    p.bytes = std::move(bytes);
    p.bytes.resize(kPage);
    p.valid = std::min<size_t>(valid, kPage);
}

void PageCache::PinnedPages::add(uint64_t base, std::vector<unsigned char> bytes, size_t valid) {
    Page p;
    p.bytes = std::move(bytes);
    p.bytes.resize(kPage);
    p.valid = std::min<size_t>(valid, kPage);
    pages_.emplace(base, std::move(p));
}

void PageCache::pin(PinnedPages pages) {
    forgetLast();
    if (pinned_.empty()) {
        pinned_ = std::move(pages.pages_);
        return;
    }
    for (auto& [base, p] : pages.pages_) pinned_.emplace(base, std::move(p));
}

void PageCache::pinAll() {
    forgetLast();
    for (auto& [base, p] : pages_) pinned_[base] = std::move(p);
    pages_.clear();
    order_.clear();
}

bool PageCache::cached(uint64_t addr) const {
    uint64_t base = addr & ~(kPage - 1);
    return pinned_.count(base) || pages_.count(base);
}

size_t PageCache::read(uint64_t addr, void* buf, size_t len) const {
    auto* out = static_cast<unsigned char*>(buf);
    size_t done = 0;
    while (done < len) {
        uint64_t a = addr + done;
        uint64_t base = a & ~(kPage - 1);
        const Page& p = page(base);
        uint64_t offset = a - base;
        if (offset >= p.valid) break;
        size_t n = static_cast<size_t>(std::min<uint64_t>(len - done, p.valid - offset));
        std::memcpy(out + done, p.bytes.data() + offset, n);
        done += n;
        if (p.valid < kPage && offset + n >= p.valid) break;
    }
    return done;
}

}  // namespace pytstates
