// SPDX-License-Identifier: Apache-2.0
// Every pybind11 internals record of a CPython runtime: the capsules under
// __pybind11_internals_v* in each interpreter's builtins (v <= 4) and state dict (v >= 5),
// the internals object each leads to, its TLS key, istate, registered types, and the
// loaded modules that use its ID.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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
    bool confirmed = false;  // the static its release keeps the record in holds this record's cell
    std::string how;         // which one ("its internals_pp_manager holds this record")
};

// A 3.x module-local record (__pybind11_module_local_vNN_..._<address>): one module's own
// registrations, no thread-state key. The number in its name is the address of a static in the
// module that made it.
struct ModuleLocalRecord {
    std::string id;
    uint64_t interpreter = 0;
    std::string dictName;
    uint64_t keyAddress = 0;  // the number in the name
    std::string module;       // the loaded module holding that address; empty when none
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

struct NanobindModuleScan;

// Which loaded modules hold which pybind11 IDs (and nanobind ABI tags) in their read-only data,
// and the layouts of those that carry DWARF for them. File work only: done before a live target
// is stopped.
struct Pybind11ModuleScan {
    std::map<std::string, std::vector<size_t>> modulesById;  // ID -> indexes into Target::modules()
    std::map<size_t, InternalsLayout> dwarfLayouts;          // module index -> layout from its DWARF
    std::shared_ptr<NanobindModuleScan> nanobind;            // always set by scanBindingModules
};
// useDwarf=false: the published layouts only (--no-dwarf).
Pybind11ModuleScan scanBindingModules(const Target& target, bool useDwarf);

// A capsule under another binding library's key in the same dicts (nanobind's), for its reader.
struct ForeignRecordKey {
    std::string key;
    uint64_t interpreter = 0;
    std::string dictName;
    uint64_t capsule = 0;
};

struct Pybind11Records {
    std::vector<InternalsRecord> records;
    std::vector<ModuleLocalRecord> moduleLocals;
    std::vector<ForeignRecordKey> nanobindKeys;  // "__nb_internals_..."
};
Pybind11Records findInternalsRecords(const Target& target, const Runtime& runtime, bool withTypes,
                                     const Pybind11ModuleScan& scan);

}  // namespace pytstates
