// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/stop_snapshot.h"

#include <sys/uio.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <sstream>
#include <string>

namespace pytstates {

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kRedZone = 128;             // x86_64's red zone below sp: a leaf's locals
constexpr uint64_t kMaxStack = 1 << 20;        // as far above sp as the attribution searches a stack
constexpr uint64_t kPthreadBytes = 2 * kPage;  // covers glibc's struct pthread (2.3 KiB on x86_64) from any offset
constexpr uint64_t kLockBytes = 128;           // a lock's words around the address its waiter passes

struct Mapping {
    uint64_t start = 0, end = 0;
};

std::vector<Mapping> readableMappings(const std::string& maps) {
    std::vector<Mapping> out;
    std::istringstream in(maps);
    for (std::string line; std::getline(in, line);) {
        char* rest = nullptr;
        Mapping m;
        m.start = std::strtoull(line.c_str(), &rest, 16);
        if (!rest || *rest != '-') continue;
        m.end = std::strtoull(rest + 1, &rest, 16);
        if (!rest || rest[0] != ' ' || rest[1] != 'r') continue;  // unreadable: nothing to copy
        out.push_back(m);
    }
    return out;  // the kernel lists them by address
}

const Mapping* mappingOf(const std::vector<Mapping>& maps, uint64_t addr) {
    auto it = std::upper_bound(maps.begin(), maps.end(), addr, [](uint64_t a, const Mapping& m) { return a < m.start; });
    if (it == maps.begin()) return nullptr;
    --it;
    return addr < it->end ? &*it : nullptr;
}

// [start, end) clipped to the mapping holding start, in whole pages.
void addRange(const std::vector<Mapping>& maps, uint64_t start, uint64_t end, std::vector<std::pair<uint64_t, uint64_t>>& out) {
    const Mapping* m = mappingOf(maps, start);
    if (!m || end <= start) return;
    end = std::min(end, m->end);
    start &= ~(kPage - 1);
    end = (end + kPage - 1) & ~(kPage - 1);
    out.emplace_back(start, end);
}

}  // namespace

std::vector<std::pair<uint64_t, uint64_t>> snapshotRanges(const std::vector<OsThread>& threads, const std::string& mapsText,
                                                          const Arch& arch, size_t* stacksOutside) {
    std::vector<Mapping> maps = readableMappings(mapsText);
    if (stacksOutside) *stacksOutside = 0;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    unsigned argRegister = arch.machine == Machine::X86_64 ? 5 : 0;  // DWARF numbers of rdi, x0
    for (const auto& t : threads) {
        if (t.sp && stacksOutside && !mappingOf(maps, t.sp)) ++*stacksOutside;
        if (t.sp) {
            uint64_t low = t.sp > kRedZone ? t.sp - kRedZone : 0;
            if (!mappingOf(maps, low)) low = t.sp;
            addRange(maps, low, t.sp + kMaxStack, ranges);
        }
        if (t.pthread) addRange(maps, t.pthread, t.pthread + kPthreadBytes, ranges);
        if (argRegister < t.registers.size()) {
            uint64_t arg = t.registers[argRegister];
            if (arg >= kLockBytes) addRange(maps, arg - kLockBytes, arg + kLockBytes, ranges);
        }
    }
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto& r : ranges) {
        if (!merged.empty() && r.first <= merged.back().second) merged.back().second = std::max(merged.back().second, r.second);
        else merged.push_back(r);
    }
    return merged;
}

size_t readPagesBatched(int pid, const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                        const std::function<void(uint64_t base, const unsigned char* bytes)>& page,
                        std::vector<unsigned char>& scratch) {
    // One remote iovec per run of adjacent pages (the kernel pins each iovec's pages in one go),
    // one local buffer; at most IOV_MAX runs and kBatchPages pages a call.
    constexpr size_t kMaxRuns = IOV_MAX;
    constexpr size_t kMaxPages = kBatchPages;
    std::vector<uint64_t> bases;
    for (const auto& [start, end] : ranges)
        for (uint64_t a = start; a < end; a += kPage) bases.push_back(a);
    if (scratch.size() < std::min(bases.size(), kMaxPages) * kPage) scratch.resize(std::min(bases.size(), kMaxPages) * kPage);
    unsigned char* buffer = scratch.data();
    std::vector<iovec> remote;
    remote.reserve(kMaxRuns);
    size_t calls = 0;
    for (size_t first = 0; first < bases.size();) {
        remote.clear();
        size_t count = 0;
        for (; first + count < bases.size() && count < kMaxPages; ++count) {
            uint64_t base = bases[first + count];
            if (!remote.empty() && reinterpret_cast<uint64_t>(remote.back().iov_base) + remote.back().iov_len == base) {
                remote.back().iov_len += kPage;
                continue;
            }
            if (remote.size() == kMaxRuns) break;
            remote.push_back({reinterpret_cast<void*>(base), kPage});
        }
        iovec local{buffer, count * kPage};
        ++calls;
        ssize_t n = process_vm_readv(pid, &local, 1, remote.data(), remote.size(), 0);
        // The kernel stops at the first page it cannot read: keep those before it, skip that one.
        size_t whole = n > 0 ? static_cast<size_t>(n) / kPage : 0;
        for (size_t i = 0; i < whole; ++i) page(bases[first + i], buffer + i * kPage);
        first += whole < count ? whole + 1 : count;
    }
    return calls;
}

}  // namespace pytstates
