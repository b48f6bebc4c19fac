// SPDX-License-Identifier: Apache-2.0
// A module's symbol table sorted by address, built once: the function that holds a pc found by
// binary search where libdwfl's dwfl_module_addrinfo walks every symbol for each pc (millions of
// instructions per pc in a large table).
#pragma once

#include <elfutils/libdwfl.h>
#include <optional>
#include <string>
#include <vector>

namespace pytstates {

class SymbolIndex {
public:
    explicit SymbolIndex(Dwfl_Module* mod);

    // The symbol dwfl_module_addrinfo names for `address` (gdb's alias of it: the last name of the
    // functions at its start), when the sorted table makes the answer certain: one group of sized
    // function symbols, all of one size, starts last at or below it and holds it, and no symbol
    // that starts lower reaches it; "" when no symbol can be its (it lies in code, no symbol at or
    // below it reaches it, and none of them is sizeless). Else nullopt: libdwfl's own search decides.
    std::optional<std::string> nameAt(GElf_Addr address) const;

    // Of the function symbols at `address`, the name that sorts last, or `found` if it sorts later.
    std::string aliasDebuggersShow(GElf_Addr address, const char* found) const;

private:
    struct Entry {
        GElf_Addr address = 0;
        GElf_Xword size = 0;
        int index = 0;
        bool function = false;  // STT_FUNC
        bool candidate = false; // one dwfl_module_addrinfo considers: named, defined, not a section, file or TLS symbol
    };
    const char* name(const Entry& e) const;

    Dwfl_Module* mod_;
    std::vector<Entry> entries_;       // by address
    std::vector<GElf_Addr> endBefore_; // the highest end of the candidates before each entry (and after the last)
    std::vector<bool> sizelessBefore_; // whether a candidate before each entry (and after the last) has no size
};

}  // namespace pytstates
