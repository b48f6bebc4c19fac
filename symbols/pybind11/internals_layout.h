// SPDX-License-Identifier: Apache-2.0
// Where pybind11::detail::internals keeps what pytstates reads, per internals version
// (x86_64, libstdc++; shared/research/pybind11-internals.md section 3), or from DWARF.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pytstates {

class DwarfTypes;

struct InternalsLayout {
    int64_t registeredTypesPy = 56;     // unordered_map<PyTypeObject*, vector<type_info*>>
    int64_t staticPropertyType = 432;   // then default_metaclass (+8) and instance_base (+16)
    int64_t tstate = 456;               // always static_property_type + 24
    int64_t istate = 464;
    bool tstateIsPointer = true;        // v <= 4: Py_tss_t*; v >= 5: an inline Py_tss_t
    std::string source = "table";       // "dwarf", "table", "anchor"
};

// The published layout of an internals version; false when the version is unknown.
bool internalsLayoutForVersion(int version, InternalsLayout* out);
// From a module's DWARF (pybind11::detail::internals); nullopt when it has none.
std::optional<InternalsLayout> internalsLayoutFromDwarf(DwarfTypes& dwarf, int version);

}  // namespace pytstates
