// Every pybind11 internals record of a CPython runtime: the capsules under
// __pybind11_internals_v* in each interpreter's builtins (v <= 4) and state dict (v >= 5),
// the internals object each leads to, its TLS key, istate, registered types, and the
// loaded modules that use its ID.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/runtimes.h"
#include "symbols/pybind11/internals_id.h"
#include "symbols/pybind11/internals_layout.h"
#include "symbols/target.h"

namespace pytstates {

struct RegisteredType {
    std::string pythonName;
    std::string cppName;  // demangled
    uint64_t typeObject = 0;
};

struct ModuleUse {
    std::string path;
    bool confirmed = false;  // its get_internals_pp static holds this record's cell
};

struct InternalsRecord {
    InternalsId id;
    uint64_t interpreter = 0;  // whose dict holds the capsule
    std::string dictName;      // "builtins" or "state dict"
    uint64_t capsule = 0;
    uint64_t cell = 0;         // internals** (the capsule's pointer)
    uint64_t address = 0;      // the internals object
    uint64_t istate = 0;
    std::optional<uint32_t> tlsKey;
    uint64_t tssAddress = 0;   // the Py_tss_t holding the key
    InternalsLayout layout;
    std::vector<ModuleUse> modules;
    std::vector<RegisteredType> types;
    std::string problem;       // why the record could not be decoded
};

// Which loaded modules hold which pybind11 IDs in their read-only data, and the internals layout
// of those that carry DWARF for it. File work only: done before a live target is stopped.
struct Pybind11ModuleScan {
    std::map<std::string, std::vector<size_t>> modulesById;  // ID -> indexes into Target::modules()
    std::map<size_t, InternalsLayout> dwarfLayouts;          // module index -> layout from its DWARF
};
// useDwarf=false: the published layouts only (--no-dwarf).
Pybind11ModuleScan scanPybind11Modules(const Target& target, bool useDwarf);

std::vector<InternalsRecord> findInternalsRecords(const Target& target, const Runtime& runtime, bool withTypes,
                                                  const Pybind11ModuleScan& scan);

}  // namespace pytstates
