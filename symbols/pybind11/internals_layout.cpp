// SPDX-License-Identifier: Apache-2.0
#include "symbols/pybind11/internals_layout.h"

#include "symbols/elf/dwarf_types.h"

namespace pytstates {

bool internalsLayoutForVersion(int version, InternalsLayout* out) {
    InternalsLayout l;
    if (version >= 1 && version <= 4) {  // pybind11 2.2 - 2.13 (default on Python < 3.12)
        l.staticPropertyType = 432;
        l.istate = 464;
        l.tstateIsPointer = true;
    } else if (version >= 5 && version <= 11) {  // 2.11+ on Python 3.12+, 3.0.x
        l.staticPropertyType = 408;
        l.istate = 448;
        l.tstateIsPointer = false;
    } else if (version == 12) {  // 3.1
        l.registeredTypesPy = 112;
        l.staticPropertyType = 464;
        l.istate = 496;
        l.tstateIsPointer = false;
    } else {
        return false;
    }
    l.tstate = l.staticPropertyType + 24;
    l.source = "table";
    *out = l;
    return true;
}

std::optional<InternalsLayout> internalsLayoutFromDwarf(DwarfTypes& dwarf, int version) {
    const char* type = "pybind11::detail::internals";
    auto sprop = dwarf.memberOffset(type, "static_property_type");
    auto tstate = dwarf.memberOffset(type, "tstate");
    auto istate = dwarf.memberOffset(type, "istate");
    auto types = dwarf.memberOffset(type, "registered_types_py");
    if (!sprop || !tstate || !istate || !types) return std::nullopt;
    InternalsLayout l;
    l.staticPropertyType = *sprop;
    l.tstate = *tstate;
    l.istate = *istate;
    l.registeredTypesPy = *types;
    l.tstateIsPointer = version <= 4;
    l.source = "dwarf";
    return l;
}

}  // namespace pytstates
