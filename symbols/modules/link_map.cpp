// SPDX-License-Identifier: Apache-2.0
#include "symbols/modules/link_map.h"

#include <elf.h>

#include <set>

namespace pytstates {

namespace {
constexpr size_t kMaxObjects = 4096;     // per namespace; a longer chain is corrupt
constexpr size_t kMaxNamespaces = 64;
}  // namespace

LinkMapResult readLinkMap(const Memory& memory, uint64_t phdr, uint64_t phnum) {
    LinkMapResult result;
    if (!phdr || !phnum || phnum > 256) {
        result.note = "no AT_PHDR in the auxiliary vector";
        return result;
    }
    uint64_t dynamicVaddr = 0, phdrVaddr = 0;
    bool havePhdr = false;
    for (uint64_t i = 0; i < phnum; ++i) {
        auto ph = memory.readValue<Elf64_Phdr>(phdr + i * sizeof(Elf64_Phdr));
        if (!ph) {
            result.note = "the executable's program headers are unreadable";
            return result;
        }
        if (ph->p_type == PT_PHDR) {
            phdrVaddr = ph->p_vaddr;
            havePhdr = true;
        }
        if (ph->p_type == PT_DYNAMIC) dynamicVaddr = ph->p_vaddr;
    }
    result.executableBias = havePhdr ? phdr - phdrVaddr : 0;
    if (!dynamicVaddr) {
        result.note = "statically linked executable: no link map";
        return result;
    }
    uint64_t dyn = result.executableBias + dynamicVaddr;
    for (int i = 0; i < 512; ++i) {
        auto d = memory.readValue<Elf64_Dyn>(dyn + i * sizeof(Elf64_Dyn));
        if (!d || d->d_tag == DT_NULL) break;
        if (d->d_tag == DT_DEBUG) {
            result.rDebug = d->d_un.d_ptr;
            break;
        }
    }
    if (!result.rDebug) {
        result.note = "DT_DEBUG is not set: the dynamic linker had not started";
        return result;
    }
    walkNamespaces(memory, result);
    return result;
}

void walkNamespaces(const Memory& memory, LinkMapResult& result) {
    std::set<uint64_t> seen;
    uint64_t rDebug = result.rDebug;
    for (long ns = 0; rDebug && ns < static_cast<long>(kMaxNamespaces); ++ns) {
        auto version = memory.readValue<int32_t>(rDebug);
        auto map = memory.readPointer(rDebug + 8);
        if (!version || !map) {
            result.note = "r_debug is unreadable";
            break;
        }
        uint64_t lm = *map;
        for (size_t n = 0; lm && n < kMaxObjects; ++n) {
            if (!seen.insert(lm).second) {
                result.note = "the link map list is cyclic";
                break;
            }
            auto addr = memory.readPointer(lm), name = memory.readPointer(lm + 8), ld = memory.readPointer(lm + 16),
                 next = memory.readPointer(lm + 24);
            if (!addr || !name || !ld || !next) {
                result.note = "a link_map entry is unreadable";
                break;
            }
            LinkMapEntry e;
            e.ns = ns;
            e.address = lm;
            e.bias = *addr;
            e.dynamic = *ld;
            if (*name) e.name = memory.readCString(*name, 4096).value_or("");
            result.entries.push_back(e);
            lm = *next;
        }
        // glibc >= 2.35: r_version 2 means struct r_debug_extended with r_next at 40.
        if (*version < 2) break;
        auto nextNs = memory.readPointer(rDebug + 40);
        if (!nextNs) break;
        rDebug = *nextNs;
    }
}

LinkMapResult readLinkMapAt(const Memory& memory, uint64_t rDebug) {
    LinkMapResult result;
    result.rDebug = rDebug;
    walkNamespaces(memory, result);
    return result;
}

}  // namespace pytstates
