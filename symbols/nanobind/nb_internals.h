// SPDX-License-Identifier: Apache-2.0
// nanobind's internals records beside pybind11's: the capsules under
// "__nb_internals_<abi tag>_<domain>__" in an interpreter's state dict (nanobind 2.x,
// src/nb_internals.cpp), the nb_internals object each leads to, the modules that use it, and
// (--types) the classes it registered. nanobind keeps no thread-state cache: its
// gil_scoped_acquire is PyGILState_Ensure/Release, and its one TLS key (nb_static_property_disabled,
// free-threaded builds) holds a flag, not a thread state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/layout.h"
#include "symbols/pybind11/internals_reader.h"
#include "symbols/target.h"

namespace pytstates {

struct NanobindRecord {
    std::string key;         // the dict key
    std::string abiTag;      // "v19_system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1"
    int version = 0;         // NB_INTERNALS_VERSION (19)
    std::string domain;      // NB_DOMAIN, empty for the default one
    uint64_t interpreter = 0;
    std::string dictName;
    uint64_t capsule = 0;
    uint64_t address = 0;    // nb_internals*
    std::vector<ModuleUse> modules;
    std::vector<RegisteredType> types;
    std::string layout;      // where the --types layout came from: "table", or "dwarf and table" (nb_internals from DWARF)
    std::string problem;
};

// True when a dict key names a nanobind internals record.
bool isNanobindKey(const std::string& key);

// The nanobind modules of a target (those whose read-only data holds an ABI tag) and the layout
// of nb_internals from the DWARF of those that carry it; filled by the binding modules' scan
// (scanBindingModules) in the same pass over .rodata as pybind11's.
struct NanobindModuleScan {
    std::map<std::string, std::vector<size_t>> modulesByTag;  // ABI tag -> indexes into Target::modules()
    std::map<size_t, int64_t> typeMapOffsets;                 // module -> offsetof(nb_internals, type_c2p_slow), from DWARF
};
// A nanobind ABI tag literal in a chunk of a module's .rodata.
std::optional<std::string> nanobindTagIn(const char* begin, const char* end);
class DwarfTypes;
std::optional<int64_t> nanobindTypeMapFromDwarf(DwarfTypes& dwarf);

NanobindRecord readNanobindRecord(const Target& target, const CPythonLayout& py, const NanobindModuleScan& scan,
                                  const std::string& key, uint64_t capsule, bool withTypes);

}  // namespace pytstates
