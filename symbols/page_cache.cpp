#include "symbols/page_cache.h"

#include <algorithm>
#include <cstring>

namespace pytstates {

const PageCache::Page& PageCache::page(uint64_t base) const {
    auto it = pages_.find(base);
    if (it != pages_.end()) return it->second;
    Page p;
    p.bytes.resize(kPage);
    ++fetches_;
    p.valid = fetch_ ? fetch_(base, p.bytes.data(), kPage) : 0;
    return pages_.emplace(base, std::move(p)).first->second;
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
