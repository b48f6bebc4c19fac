// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/function_extent.h"

#include <cstring>
#include <vector>

namespace pytstates {

namespace {
constexpr uint8_t kUdata4 = 0x03, kSdata4 = 0x0b, kDatarel = 0x30;  // DW_EH_PE_* encodings

int32_t sdata4(const unsigned char* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
}  // namespace

std::optional<std::pair<uint64_t, uint64_t>> functionExtentAt(const ElfFile& elf, uint64_t vaddr) {
    auto hdr = elf.findSection(".eh_frame_hdr");
    if (!hdr || hdr->size < 12) return std::nullopt;
    std::vector<unsigned char> b(hdr->size);
    if (elf.readAt(hdr->offset, b.data(), b.size()) != b.size()) return std::nullopt;
    // version 1; eh_frame_ptr as a 4-byte pc-relative value, the count as udata4, the table as
    // datarel sdata4 pairs (initial location, FDE address) sorted by location: what GNU ld, gold,
    // lld and mold write.
    if (b[0] != 1 || (b[1] & 0x0f) != kSdata4 || b[2] != kUdata4 || b[3] != (kDatarel | kSdata4)) return std::nullopt;
    uint32_t count;
    std::memcpy(&count, &b[8], sizeof count);
    if (12 + uint64_t(count) * 8 > b.size()) return std::nullopt;
    const unsigned char* table = &b[12];
    auto location = [&](uint32_t i) { return hdr->addr + static_cast<int64_t>(sdata4(table + i * 8)); };
    uint32_t lo = 0, hi = count;  // the first entry at or after vaddr
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (location(mid) < vaddr) lo = mid + 1;
        else hi = mid;
    }
    if (lo >= count || location(lo) != vaddr) return std::nullopt;
    uint32_t next = lo + 1;
    while (next < count && location(next) == vaddr) ++next;
    if (next >= count) return std::nullopt;  // the last function: its end is not told
    return std::make_pair(vaddr, location(next));
}

}  // namespace pytstates
