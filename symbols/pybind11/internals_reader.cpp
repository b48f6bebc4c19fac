// SPDX-License-Identifier: Apache-2.0
#include "symbols/pybind11/internals_reader.h"

#include <cxxabi.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "symbols/cpython/python_objects.h"
#include "symbols/elf/dwarf_types.h"
#include "symbols/modules/debug_session.h"
#include "symbols/modules/module_files.h"
#include "symbols/nanobind/nb_internals.h"

namespace pytstates {

namespace {

constexpr const char* kInternalsPrefix = "__pybind11_internals_v";
constexpr const char* kLocalPrefix = "__pybind11_module_local_v";
constexpr size_t kMaxTypes = 100000;
constexpr size_t kScanChunk = 1 << 20;
constexpr size_t kMaxIdLength = 512;

std::string demangleType(const std::string& mangled) {
    std::string name = !mangled.empty() && mangled[0] == '*' ? mangled.substr(1) : mangled;
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : name;
}

// A heap type's name: tp_name points into the defining module's read-only data (which a core
// lacks when the module file is missing); ht_name is a str on the heap.
std::string typeName(const Target& target, const CPythonLayout& py, uint64_t type) {
    auto name = target.readPointer(type + py.typeName);
    if (name && *name)
        if (auto s = target.readCString(*name, 256)) return *s;
    if (py.heapTypeName == kAbsent) return {};
    return readPyUnicode(target, py, target.readPointer(type + py.heapTypeName).value_or(0), 256).value_or("");
}

// The three heap types every internals object points to, in this order, whatever its layout.
bool anchorAt(const Target& target, const CPythonLayout& py, uint64_t internals, int64_t offset) {
    static const char* names[] = {"pybind11_static_property", "pybind11_type", "pybind11_object"};
    for (int i = 0; i < 3; ++i) {
        auto type = target.readPointer(internals + offset + 8 * static_cast<uint64_t>(i));
        if (!type || !*type) return false;
        if (typeName(target, py, *type) != names[i]) return false;
    }
    return true;
}

// Where each pybind11 release keeps the record it uses, in each module (function-local statics:
// local symbols, in .symtab only; shared/research/pybind11-internals.md section 3):
//   2.2.2-2.13.6    get_internals_pp()::internals_pp, the capsule's pointer itself
//   3.0.0rc1-rc2    get_internals_pp<internals>()::s_internals_pp, the same
//   3.0.0rc3-3.0.1  get_internals_pp_manager()::internals_pp_manager, a manager whose
//                   internals_singleton_pp_ (+16, or +32 built for Python >= 3.12) is that pointer
//   3.0.2-3.1.x     internals_pp_manager<internals>::get_instance(...)::instance, the same at +16
struct Holder {
    const char* symbol;
    std::initializer_list<int64_t> offsets;  // where the capsule's pointer may sit in it
    const char* words;
};
const Holder kHolders[] = {
    {"_ZZN8pybind116detail16get_internals_ppEvE12internals_pp", {0}, "its get_internals_pp static holds this record"},
    {"_ZZN8pybind116detail16get_internals_ppINS0_9internalsEEERPSt10unique_ptrIT_St14default_deleteIS4_EEvE14s_internals_pp",
     {0}, "its get_internals_pp static holds this record"},
    {"_ZZN8pybind116detail24get_internals_pp_managerEvE20internals_pp_manager", {16, 32},
     "its internals_pp_manager holds this record"},
    {"_ZZN8pybind116detail20internals_pp_managerINS0_9internalsEE12get_instanceEPKcPFvPS2_EE8instance", {16},
     "its internals_pp_manager holds this record"},
};
constexpr uint64_t kMaxWritableScan = 64u << 20;  // per module, for stripped modules

// Without symbols (a stripped wheel), a module's writable data holding the capsule's pointer is
// the same evidence: its static or manager, found by value.
bool writableDataHolds(const Target& target, const LoadedModule& mod, uint64_t value) {
    if (!mod.elf) return false;
    uint64_t scanned = 0;
    for (const auto& seg : mod.elf->segments()) {
        if ((seg.flags & 0x80000000u) || !(seg.flags & 2) || seg.memsz == 0) continue;  // PF_W, not PT_TLS
        std::vector<uint64_t> words(4096);
        for (uint64_t at = (mod.bias + seg.vaddr + 7) & ~uint64_t(7); at < mod.bias + seg.vaddr + seg.memsz; at += words.size() * 8) {
            if ((scanned += words.size() * 8) > kMaxWritableScan) return false;
            size_t got = target.read(at, words.data(), words.size() * 8) / 8;
            for (size_t i = 0; i < got; ++i)
                if (words[i] == value) return true;
        }
    }
    return false;
}

// The modules that use an ID (from the scan), each confirmed where the static its release keeps
// the record in holds this record's cell (by symbol, or by value in a stripped module).
std::vector<ModuleUse> modulesUsing(const Target& target, const Pybind11ModuleScan& scan, const std::string& id, uint64_t cell) {
    std::vector<ModuleUse> out;
    auto it = scan.modulesById.find(id);
    if (it == scan.modulesById.end()) return out;
    for (size_t index : it->second) {
        const LoadedModule& mod = target.modules()[index];
        ModuleUse use;
        use.path = mod.path;
        bool anySymbol = false;
        for (const auto& holder : kHolders) {
            auto sym = findModuleSymbol(mod, holder.symbol);
            if (!sym) continue;
            anySymbol = true;
            for (int64_t offset : holder.offsets)
                if (cell && target.readPointer(mod.bias + sym->value + offset).value_or(0) == cell) {
                    use.confirmed = true;
                    use.how = holder.words;
                }
        }
        if (!anySymbol && cell && writableDataHolds(target, mod, cell)) {
            use.confirmed = true;
            use.how = "its writable data holds this record's pointer (no holder symbol of a known release)";
        }
        out.push_back(use);
    }
    return out;
}

InternalsLayout chooseLayout(const Target& target, const CPythonLayout& py, const Pybind11ModuleScan& scan,
                             const InternalsRecord& rec) {
    // DWARF of a module that uses this ID, when one has it.
    auto users = scan.modulesById.find(rec.id.raw);
    if (users != scan.modulesById.end()) {
        for (size_t index : users->second) {
            auto it = scan.dwarfLayouts.find(index);
            if (it == scan.dwarfLayouts.end()) continue;
            InternalsLayout l = it->second;
            l.tstateIsPointer = rec.id.version <= 4;
            if (anchorAt(target, py, rec.address, l.staticPropertyType)) return l;
        }
    }
    InternalsLayout table;
    if (internalsLayoutForVersion(rec.id.version, &table) && anchorAt(target, py, rec.address, table.staticPropertyType))
        return table;
    // Unknown STL or version: find the anchor itself; tstate is always 24 bytes after it.
    for (int64_t off = 0; off <= 1024; off += 8) {
        if (!anchorAt(target, py, rec.address, off)) continue;
        InternalsLayout l;
        l.staticPropertyType = off;
        l.tstate = off + 24;
        bool v5to11 = rec.id.version >= 5 && rec.id.version <= 11;
        l.istate = l.tstate + (v5to11 ? 16 : 8);
        l.tstateIsPointer = rec.id.version <= 4;
        l.registeredTypesPy = rec.id.version >= 12 ? 112 : 56;
        l.source = "anchor";
        return l;
    }
    InternalsLayout none;
    none.source.clear();
    return none;
}

std::vector<RegisteredType> readTypes(const Target& target, const CPythonLayout& py, const InternalsRecord& rec) {
    std::vector<RegisteredType> out;
    // libstdc++ _Hashtable: before_begin._M_nxt at +16; node {next, PyTypeObject* key, vector<type_info*>}.
    uint64_t table = rec.address + rec.layout.registeredTypesPy;
    std::set<uint64_t> seen;
    uint64_t node = target.readPointer(table + 16).value_or(0);
    while (node && out.size() < kMaxTypes && seen.insert(node).second) {
        auto key = target.readPointer(node + 8);
        auto begin = target.readPointer(node + 16), end = target.readPointer(node + 24);
        if (!key || !begin || !end) break;
        RegisteredType t;
        t.typeObject = *key;
        t.pythonName = typeName(target, py, *key);
        if (t.pythonName.empty()) t.pythonName = "?";
        if (*end > *begin && *end - *begin <= uint64_t(8) * 64) {
            auto info = target.readPointer(*begin);  // detail::type_info*
            auto cpptype = info ? target.readPointer(*info + 8) : std::nullopt;  // const std::type_info*
            auto name = cpptype ? target.readPointer(*cpptype + 8) : std::nullopt;
            if (name) t.cppName = demangleType(target.readCString(*name, 1024).value_or("?"));
        }
        out.push_back(t);
        node = target.readPointer(node).value_or(0);
    }
    return out;
}

void decode(const Target& target, const CPythonLayout& py, const Pybind11ModuleScan& scan, InternalsRecord& rec, bool withTypes) {
    auto typeName = readTypeName(target, py, rec.capsule);
    if (typeName.value_or("") != "PyCapsule") {
        rec.problem = "the value is not a capsule";
        return;
    }
    rec.cell = target.readPointer(rec.capsule + py.capsulePointer).value_or(0);
    rec.modules = modulesUsing(target, scan, rec.id.raw, rec.cell);
    if (rec.id.moduleLocal) return;  // 3.x module-local records: no thread state key
    if (!rec.cell) {
        rec.problem = "the capsule holds no pointer";
        return;
    }
    rec.address = target.readPointer(rec.cell).value_or(0);
    if (!rec.address) {
        rec.problem = "the internals pointer is NULL (finalized?)";
        return;
    }
    rec.layout = chooseLayout(target, py, scan, rec);
    if (rec.layout.source.empty()) {
        rec.problem = "the object the capsule leads to does not point to the pybind11 base types: not a pybind11 internals object";
        return;
    }
    uint64_t tss = rec.address + rec.layout.tstate;
    if (rec.layout.tstateIsPointer) tss = target.readPointer(tss).value_or(0);
    rec.tssAddress = tss;
    auto initialised = tss ? target.readValue<int32_t>(tss) : std::nullopt;
    auto key = tss ? target.readValue<uint32_t>(tss + 4) : std::nullopt;
    if (initialised && key && *initialised == 1) rec.tlsKey = *key;
    else rec.problem = "its thread-state key is not initialised";
    rec.istate = target.readPointer(rec.address + rec.layout.istate).value_or(0);
    if (withTypes) rec.types = readTypes(target, py, rec);
}

}  // namespace

Pybind11ModuleScan scanBindingModules(const Target& target, bool useDwarf) {
    Pybind11ModuleScan scan;
    scan.nanobind = std::make_shared<NanobindModuleScan>();
    const std::string prefixes[] = {kInternalsPrefix, kLocalPrefix};
    const auto& modules = target.modules();
    // One buffer for every module, not zero-filled: only the bytes read are looked at.
    const size_t chunkSize = kScanChunk + kMaxIdLength;
    std::unique_ptr<char[]> buffer(new char[chunkSize]);
    for (size_t i = 0; i < modules.size(); ++i) {
        const auto& mod = modules[i];
        if (!mod.elf) continue;
        auto rodata = mod.elf->findSection(".rodata");
        if (!rodata) continue;
        // Read in chunks with pread, not through the mapping: a big module's .rodata (torch's)
        // would otherwise stay in pytstates' resident memory. Chunks overlap by an ID's length.
        bool found = false;
        std::optional<std::string> nanobindTag;
        const char* chunk = buffer.get();
        for (uint64_t at = 0; at < rodata->size; at += kScanChunk) {
            size_t want = static_cast<size_t>(std::min<uint64_t>(chunkSize, rodata->size - at));
            size_t got = mod.elf->readAt(rodata->offset + at, buffer.get(), want);
            const char* end = chunk + got;
            for (const auto& prefix : prefixes) {
                for (const char* p = chunk; p < end;) {
                    const void* hit = memmem(p, end - p, prefix.data(), prefix.size());
                    if (!hit) break;
                    const char* s = static_cast<const char*>(hit);
                    if (s >= chunk + kScanChunk) break;  // the next chunk sees it whole
                    size_t n = strnlen(s, std::min<size_t>(kMaxIdLength, end - s));
                    std::string id(s, n);
                    InternalsId parsed;
                    if (parseInternalsId(id, &parsed)) {
                        auto& users = scan.modulesById[id];
                        if (users.empty() || users.back() != i) users.push_back(i);
                        found = true;
                    }
                    p = s + std::max<size_t>(n, 1);
                }
            }
            if (!nanobindTag) nanobindTag = nanobindTagIn(chunk, end);
            if (got < want) break;
        }
        if (nanobindTag) {
            auto& users = scan.nanobind->modulesByTag[*nanobindTag];
            if (users.empty() || users.back() != i) users.push_back(i);
        }
        // --no-dwarf: neither DWARF nor the answers it gave an earlier run (the cache holds DWARF's
        // answers: a layout from it is a layout from DWARF).
        if (!useDwarf || (!found && !nanobindTag)) continue;
        DwarfTypes* dwarf = target.dwarfTypes(mod);  // nullptr without DWARF
        if (!dwarf) continue;
        if (found)
            if (auto l = internalsLayoutFromDwarf(*dwarf, 4)) scan.dwarfLayouts[i] = *l;
        if (nanobindTag)
            if (auto off = nanobindTypeMapFromDwarf(*dwarf)) scan.nanobind->typeMapOffsets[i] = *off;
    }
    return scan;
}

Pybind11Records findInternalsRecords(const Target& target, const Runtime& runtime, bool withTypes,
                                     const Pybind11ModuleScan& scan) {
    Pybind11Records out;
    const CPythonLayout& py = runtime.layout;
    for (const auto& interp : runtime.interpreters) {
        std::set<uint64_t> seenDicts;
        for (auto [dict, name] : {std::pair<uint64_t, const char*>{interp.builtins, "builtins"},
                                  std::pair<uint64_t, const char*>{interp.dict, "state dict"}}) {
            if (!dict || !seenDicts.insert(dict).second) continue;
            auto entries = readPyDict(target, py, dict);
            if (!entries) continue;
            for (const auto& e : *entries) {
                auto key = readPyUnicode(target, py, e.key, 512);
                if (!key) continue;
                if (isNanobindKey(*key)) {
                    out.nanobindKeys.push_back({*key, interp.address, name, e.value});
                    continue;
                }
                if (key->rfind(kInternalsPrefix, 0) != 0 && key->rfind(kLocalPrefix, 0) != 0) continue;
                InternalsId id;
                if (!parseInternalsId(*key, &id)) continue;
                if (id.moduleLocal) {  // 3.x: the number in the name is an address in the module that made it
                    ModuleLocalRecord local;
                    local.id = *key;
                    local.interpreter = interp.address;
                    local.dictName = name;
                    size_t digits = key->find_last_not_of("0123456789");
                    if (digits != std::string::npos && digits + 1 < key->size())
                        local.keyAddress = std::strtoull(key->c_str() + digits + 1, nullptr, 10);
                    for (const auto& m : target.modules())
                        if (local.keyAddress && local.keyAddress >= m.start && local.keyAddress < m.end) local.module = m.path;
                    out.moduleLocals.push_back(std::move(local));
                    continue;
                }
                InternalsRecord rec;
                rec.id = id;
                rec.interpreter = interp.address;
                rec.dictName = name;
                rec.capsule = e.value;
                decode(target, py, scan, rec, withTypes);
                out.records.push_back(std::move(rec));
            }
        }
    }
    return out;
}

}  // namespace pytstates
