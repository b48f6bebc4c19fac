// Page-granular cache in front of an expensive memory source (a debugger's API, a syscall per
// read): the analyses read many small fields close together.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace pytstates {

class PageCache {
public:
    using Fetch = std::function<size_t(uint64_t addr, void* buf, size_t len)>;
    explicit PageCache(Fetch fetch) : fetch_(std::move(fetch)) {}

    size_t read(uint64_t addr, void* buf, size_t len) const;
    void clear() { pages_.clear(); }
    size_t fetches() const { return fetches_; }

private:
    static constexpr uint64_t kPage = 4096;
    struct Page {
        size_t valid = 0;  // readable bytes from the page start
        std::vector<unsigned char> bytes;
    };
    const Page& page(uint64_t base) const;

    Fetch fetch_;
    mutable std::unordered_map<uint64_t, Page> pages_;
    mutable size_t fetches_ = 0;
};

}  // namespace pytstates
