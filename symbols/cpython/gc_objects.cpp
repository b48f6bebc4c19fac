// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/gc_objects.h"
#include "symbols/progress.h"
#include "symbols/text/hex_address.h"

#include <vector>

namespace pytstates {

namespace {

constexpr int64_t kGcGenerationSize = 24;  // struct gc_generation: PyGC_Head head; int threshold, count
constexpr int kGenerations = 3;
// _gc_next's low bit(s) mark unreachable objects during a collection, _gc_prev's two low bits are
// flags (CPython masks them with ~3). Objects are 16-byte aligned but a list head need not be:
// Debian 13's 3.13.5 keeps its generations at 4 past an 8-byte boundary (interp + 7420).
constexpr uint64_t kLinkMask = ~uint64_t(3);

}  // namespace

GcWalk walkGcObjects(const Memory& memory, const CPythonLayout& layout, uint64_t gcState,
                     const std::function<void(uint64_t object, uint64_t type)>& visit, size_t maxObjects) {
    GcWalk walk;
    if (layout.gcGenerations == kAbsent || layout.freeThreaded) {
        walk.problem = layout.freeThreaded ? "a free-threaded build keeps no collector lists" : "the collector's lists are not in the layout";
        return walk;
    }
    std::vector<uint64_t> heads;
    heads.reserve(kGenerations + 1);
    for (int g = 0; g < kGenerations; ++g) heads.push_back(gcState + layout.gcGenerations + g * kGcGenerationSize);
    if (layout.gcPermanent != kAbsent) heads.push_back(gcState + layout.gcPermanent);
    // The object follows its PyGC_Head; one 32-byte read per node gives both links and ob_type.
    const int64_t objectOffset = 16;
    for (uint64_t head : heads) {
        auto first = memory.readPointer(head);
        if (!first) {
            walk.problem = "the collector's list at " + hexAddress(head) + " is unreadable";
            continue;
        }
        uint64_t prev = head, node = *first & kLinkMask;
        size_t walked = 0;
        while (node != head) {
            uint64_t words[4];
            if (!node || !memory.readExact(node, words, sizeof words)) {
                walk.problem = "the collector's list at " + hexAddress(head) + " leads to unreadable " + hexAddress(node);
                break;
            }
            if ((words[1] & kLinkMask) != prev) {
                walk.problem = "the collector's list at " + hexAddress(head) + " is broken at " + hexAddress(node);
                break;
            }
            if (++walked > maxObjects) {
                walk.problem = "the collector's list at " + hexAddress(head) + " is longer than " + std::to_string(maxObjects);
                break;
            }
            uint64_t object = node + objectOffset;
            size_t typeWord = static_cast<size_t>((objectOffset + layout.objectType) / 8);
            uint64_t type = typeWord < 4 ? words[typeWord] : memory.readPointer(object + layout.objectType).value_or(0);
            visit(object, type);
            if ((++walk.objects & 0xffff) == 0 && progressWanted())
                tellProgress("pytstates: walking the collector's lists: " + std::to_string(walk.objects / 1000) + " thousand objects");
            prev = node;
            node = words[0] & kLinkMask;
        }
    }
    return walk;
}

}  // namespace pytstates
