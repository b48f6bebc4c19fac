// SPDX-License-Identifier: Apache-2.0
#include "symbols/native/symbol_index.h"

#include <gelf.h>
#include <algorithm>
#include <map>

namespace pytstates {

SymbolIndex::SymbolIndex(Dwfl_Module* mod) : mod_(mod) {
    // Whether a section holds code, per ELF (the module's own, or the debug file's) and index.
    std::map<std::pair<Elf*, GElf_Word>, bool> code;
    auto inCode = [&](Elf* elf, GElf_Word shndx) {
        auto it = code.find({elf, shndx});
        if (it != code.end()) return it->second;
        GElf_Shdr shdr;
        Elf_Scn* scn = elf ? elf_getscn(elf, shndx) : nullptr;
        bool exec = !scn || !gelf_getshdr(scn, &shdr) || (shdr.sh_flags & SHF_EXECINSTR);  // unknown: kept
        return code.emplace(std::make_pair(elf, shndx), exec).first->second;
    };
    int count = dwfl_module_getsymtab(mod);
    for (int i = 1; i < count; ++i) {
        GElf_Sym sym;
        GElf_Addr addr = 0;
        GElf_Word shndx = 0;
        Elf* elf = nullptr;
        const char* name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, nullptr);
        if (!name) continue;
        int type = GELF_ST_TYPE(sym.st_info);
        Entry e;
        e.address = addr;
        e.size = sym.st_size;
        e.index = i;
        e.function = type == STT_FUNC;
        // As libdwfl's __libdwfl_addrsym filters them. A symbol of a data section is left out: it
        // holds no pc, and sections do not overlap (an absolute or special index is kept).
        e.candidate = name[0] != '\0' && sym.st_shndx != SHN_UNDEF && type != STT_SECTION && type != STT_FILE && type != STT_TLS;
        if (e.candidate && !e.function && shndx != SHN_UNDEF && shndx < SHN_LORESERVE && !inCode(elf, shndx)) e.candidate = false;
        if (e.function || e.candidate) entries_.push_back(e);
    }
    std::sort(entries_.begin(), entries_.end(),
              [](const Entry& a, const Entry& b) { return a.address != b.address ? a.address < b.address : a.index < b.index; });
    endBefore_.resize(entries_.size() + 1);
    sizelessBefore_.resize(entries_.size() + 1);
    GElf_Addr end = 0;
    bool sizeless = false;
    for (size_t i = 0; i < entries_.size(); ++i) {
        endBefore_[i] = end;
        sizelessBefore_[i] = sizeless;
        if (entries_[i].candidate) {
            end = std::max(end, entries_[i].address + entries_[i].size);
            sizeless = sizeless || entries_[i].size == 0;
        }
    }
    endBefore_.back() = end;
    sizelessBefore_.back() = sizeless;
}

const char* SymbolIndex::name(const Entry& e) const {
    GElf_Sym sym;
    GElf_Addr addr = 0;
    return dwfl_module_getsym_info(mod_, e.index, &sym, &addr, nullptr, nullptr, nullptr);
}

std::optional<std::string> SymbolIndex::nameAt(GElf_Addr address) const {
    // The group of candidates with the highest start at or below the address.
    auto after = std::upper_bound(entries_.begin(), entries_.end(), address,
                                  [](GElf_Addr a, const Entry& e) { return a < e.address; });
    // No candidate at or below it reaches it, and none is sizeless (libdwfl's fallback for
    // handwritten code): libdwfl finds no symbol (a static function of a stripped file). Only for
    // an address in code: the data symbols this index leaves out can hold no other.
    size_t below = static_cast<size_t>(after - entries_.begin());
    if (endBefore_[below] <= address && !sizelessBefore_[below]) {
        Dwarf_Addr inSection = address, bias = 0;
        Elf_Scn* scn = dwfl_module_address_section(mod_, &inSection, &bias);
        GElf_Shdr shdr;
        if (scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR)) return std::string();
        return std::nullopt;
    }
    auto last = after;
    while (last != entries_.begin() && !std::prev(last)->candidate) --last;
    if (last == entries_.begin()) return std::nullopt;
    GElf_Addr start = std::prev(last)->address;
    auto first = std::lower_bound(entries_.begin(), last, start, [](const Entry& e, GElf_Addr a) { return e.address < a; });
    // A symbol starting lower that reaches the address: libdwfl prefers by binding, not by start.
    if (endBefore_[first - entries_.begin()] > address) return std::nullopt;
    GElf_Xword size = 0;
    for (auto e = first; e != after; ++e) {
        if (!e->candidate) continue;
        if (!e->function || e->size == 0 || (size && e->size != size)) return std::nullopt;
        size = e->size;
    }
    if (!size || address - start >= size) return std::nullopt;
    // Any of them is libdwfl's answer; the name shown is the one that sorts last, as below.
    return aliasDebuggersShow(start, "");
}

std::string SymbolIndex::aliasDebuggersShow(GElf_Addr address, const char* found) const {
    std::string best = found;
    for (auto e = std::lower_bound(entries_.begin(), entries_.end(), address,
                                   [](const Entry& x, GElf_Addr a) { return x.address < a; });
         e != entries_.end() && e->address == address; ++e) {
        if (!e->function) continue;
        const char* n = name(*e);
        if (n && best < n) best = n;
    }
    return best;
}

}  // namespace pytstates
