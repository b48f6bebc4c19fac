// SPDX-License-Identifier: Apache-2.0
// Read-only view of a target's address space. Every read is bounded and may fail;
// a failed read is a value (std::nullopt / short count), never an exception.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace pytstates {

class Memory {
public:
    virtual ~Memory() = default;
    // Copies up to len bytes at addr into buf; returns how many leading bytes were readable.
    virtual size_t read(uint64_t addr, void* buf, size_t len) const = 0;

    // The same, for bytes read once in a pass over many places (each thread's innermost stack
    // words): a reader that keeps pages for reads to come need not keep these.
    virtual size_t readOnce(uint64_t addr, void* buf, size_t len) const { return read(addr, buf, len); }

    bool readExact(uint64_t addr, void* buf, size_t len) const { return len == 0 || read(addr, buf, len) == len; }

    template <typename T>
    std::optional<T> readValue(uint64_t addr) const {
        static_assert(std::is_trivially_copyable_v<T>);
        T value{};
        if (!readExact(addr, &value, sizeof value)) return std::nullopt;
        return value;
    }
    std::optional<uint64_t> readPointer(uint64_t addr) const { return readValue<uint64_t>(addr); }

    // The pages of these [start, end) ranges will be read next: fetched together where each read
    // costs a system call (a stopped live process); nothing to do elsewhere.
    virtual void prefetch(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) const { (void)ranges; }

    // A NUL-terminated string of at most maxLen bytes; nullopt when unreadable or unterminated.
    std::optional<std::string> readCString(uint64_t addr, size_t maxLen = 4096) const;
};

}  // namespace pytstates
