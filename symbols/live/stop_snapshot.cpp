// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/stop_snapshot.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "symbols/text/proc_maps.h"

namespace pytstates {

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kRedZone = 128;             // x86_64's red zone below sp: a leaf's locals
constexpr uint64_t kMaxStack = 1 << 20;        // as far above sp as the attribution searches a stack
constexpr uint64_t kPthreadBytes = 2 * kPage;  // covers glibc's struct pthread (2.3 KiB on x86_64) from any offset
constexpr uint64_t kLockBytes = 128;           // a lock's words around the address its waiter passes

const MappedRange* mappingOf(const std::vector<MappedRange>& maps, uint64_t addr) {
    auto it = std::upper_bound(maps.begin(), maps.end(), addr, [](uint64_t a, const MappedRange& m) { return a < m.start; });
    if (it == maps.begin()) return nullptr;
    --it;
    return addr < it->end ? &*it : nullptr;
}

// [start, end) clipped to the mapping holding start, in whole pages.
void addRange(const std::vector<MappedRange>& maps, uint64_t start, uint64_t end, std::vector<std::pair<uint64_t, uint64_t>>& out) {
    const MappedRange* m = mappingOf(maps, start);
    if (!m || end <= start) return;
    end = std::min(end, m->end);
    start &= ~(kPage - 1);
    end = (end + kPage - 1) & ~(kPage - 1);
    out.emplace_back(start, end);
}

}  // namespace

PageRanges sortedAndMerged(PageRanges ranges) {
    std::sort(ranges.begin(), ranges.end());
    PageRanges merged;
    for (const auto& r : ranges) {
        if (!merged.empty() && r.first <= merged.back().second) merged.back().second = std::max(merged.back().second, r.second);
        else merged.push_back(r);
    }
    return merged;
}

PageRanges without(const PageRanges& ranges, const PageRanges& minus) {
    PageRanges out;
    auto m = minus.begin();
    for (auto [start, end] : ranges) {
        while (m != minus.end() && m->second <= start) ++m;
        for (auto k = m; k != minus.end() && k->first < end; ++k) {
            if (k->first > start) out.emplace_back(start, k->first);
            start = std::max(start, k->second);
        }
        if (start < end) out.emplace_back(start, end);
    }
    return out;
}

std::vector<MappedRange> readableMappings(const std::string& maps) {
    std::vector<MappedRange> out;
    for (const auto& m : parseMaps(maps))
        if (m.readable) out.push_back({m.start, m.end});  // unreadable: nothing to copy
    return out;  // the kernel lists them by address
}

void addThreadMemory(uint64_t sp, uint64_t pthread, const std::vector<MappedRange>& maps, PageRanges& out) {
    if (sp) {
        uint64_t low = sp > kRedZone ? sp - kRedZone : 0;
        if (!mappingOf(maps, low)) low = sp;
        addRange(maps, low, sp + kMaxStack, out);
    }
    if (pthread) addRange(maps, pthread, pthread + kPthreadBytes, out);
}

SnapshotRanges snapshotRanges(const std::vector<OsThread>& threads, const std::vector<MappedRange>& maps, const Arch& arch,
                              size_t* stacksOutside) {
    if (stacksOutside) *stacksOutside = 0;
    PageRanges own, arguments;
    unsigned argRegister = arch.machine == Machine::X86_64 ? 5 : 0;  // DWARF numbers of rdi, x0
    for (const auto& t : threads) {
        if (t.sp && stacksOutside && !mappingOf(maps, t.sp)) ++*stacksOutside;
        addThreadMemory(t.sp, t.pthread, maps, own);
        if (argRegister < t.registers.size()) {
            uint64_t arg = t.registers[argRegister];
            if (arg >= kLockBytes) addRange(maps, arg - kLockBytes, arg + kLockBytes, arguments);
        }
    }
    SnapshotRanges out;
    out.threadMemory = sortedAndMerged(std::move(own));
    out.arguments = without(sortedAndMerged(std::move(arguments)), out.threadMemory);
    return out;
}

size_t readPagesInto(int pid, const PageRanges& ranges, std::vector<std::vector<unsigned char>>& storage,
                     std::vector<CopiedPage>& out) {
    std::vector<uint64_t> bases;
    for (const auto& [start, end] : ranges)
        for (uint64_t a = start; a < end; a += kPage) bases.push_back(a);
    std::vector<iovec> remote, local;
    remote.reserve(kBatchPages);
    local.reserve(kBatchPages);
    std::vector<std::vector<unsigned char>> buffers;  // this call's, one a page
    buffers.reserve(kBatchPages);
    size_t calls = 0;
    for (size_t first = 0; first < bases.size();) {
        remote.clear();
        local.clear();
        size_t count = 0;
        for (; first + count < bases.size() && count < kBatchPages; ++count) {
            uint64_t base = bases[first + count];
            if (buffers.size() <= count) {
                if (storage.empty()) storage.emplace_back(kPage);
                buffers.push_back(std::move(storage.back()));
                storage.pop_back();
                buffers.back().resize(kPage);
            }
            local.push_back({buffers[count].data(), kPage});
            if (!remote.empty() && reinterpret_cast<uint64_t>(remote.back().iov_base) + remote.back().iov_len == base) {
                remote.back().iov_len += kPage;
                continue;
            }
            remote.push_back({reinterpret_cast<void*>(base), kPage});
        }
        ++calls;
        ssize_t n = process_vm_readv(pid, local.data(), local.size(), remote.data(), remote.size(), 0);
        // The kernel stops at the first page it cannot read: keep those before it, skip that one.
        size_t whole = n > 0 ? static_cast<size_t>(n) / kPage : 0;
        for (size_t i = 0; i < whole; ++i) out.push_back({bases[first + i], std::move(buffers[i])});
        buffers.erase(buffers.begin(), buffers.begin() + static_cast<std::ptrdiff_t>(whole));
        first += whole < count ? whole + 1 : count;
    }
    for (auto& b : buffers) storage.push_back(std::move(b));
    return calls;
}

}  // namespace pytstates
