// SPDX-License-Identifier: Apache-2.0
#include "symbols/nanobind/nb_internals.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <regex>
#include <set>

#include "symbols/cpython/python_objects.h"
#include "symbols/elf/dwarf_types.h"
#include "symbols/modules/module_files.h"

namespace pytstates {

namespace {

constexpr const char* kKeyPrefix = "__nb_internals_";
// nanobind::detail::internals, the static each module's copy of nanobind keeps its record in.
constexpr const char* kInternalsStatic = "_ZN8nanobind6detail9internalsE";
constexpr size_t kMaxBuckets = 1 << 20;

// nanobind 2.x (internals v19) on x86_64 with libstdc++, non-free-threaded, measured on nanobind
// 2.12's DWARF and memory: nb_internals.type_c2p_slow is a tsl::robin_map<const std::type_info*,
// type_data*>; in it the bucket array and its size; a bucket is {uint32 hash (stored: it fits in
// the padding), int16 distance (-1: empty), bool last, value} with the pair of pointers at +8;
// type_data has its Python name at +8 and std::type_info* at +16.
struct NbLayout {
    int64_t typeMap = 320;
    int64_t buckets = 32, bucketCount = 40;
    int64_t bucketSize = 24, bucketDistance = 4, bucketValue = 8;
    int64_t typeDataName = 8, typeDataType = 16;
};

std::string demangle(const std::string& name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : name;
}

}  // namespace

bool isNanobindKey(const std::string& key) { return key.rfind(kKeyPrefix, 0) == 0; }

std::optional<std::string> nanobindTagIn(const char* begin, const char* end) {
    // The tag is a string literal of its own (nanobind builds the key at run time):
    // "v<N>_system_libstdcpp_gxx_abi_...". Found through its "_gxx_abi_" (pybind11 3.x IDs hold
    // it too, but start with "__pybind11"), then read whole from the NUL before it.
    static const std::regex tag(R"(v\d+(_dev\d+)?_(system|msvc|mingw|gcc_cygwin)[A-Za-z0-9_]*)");
    static const std::string marker = "_gxx_abi_";
    for (const char* p = begin; p < end;) {
        const void* hit = memmem(p, end - p, marker.data(), marker.size());
        if (!hit) break;
        const char* s = static_cast<const char*>(hit);
        const char* start = s;
        while (start > begin && start[-1] != '\0' && s - start < 64) --start;
        size_t n = strnlen(start, static_cast<size_t>(end - start));
        if (start > begin && start + n < end && std::regex_match(start, start + n, tag)) return std::string(start, n);
        p = s + marker.size();
    }
    return std::nullopt;
}

std::optional<int64_t> nanobindTypeMapFromDwarf(DwarfTypes& dwarf) {
    return dwarf.memberOffset("nanobind::detail::nb_internals", "type_c2p_slow");
}

NanobindRecord readNanobindRecord(const Target& target, const CPythonLayout& py, const NanobindModuleScan& scan,
                                  const std::string& key, uint64_t capsule, bool withTypes) {
    NanobindRecord rec;
    rec.key = key;
    rec.capsule = capsule;
    // "__nb_internals_<tag>_<domain>__": the tag is one a loaded module carries (its domain may
    // hold underscores too); without one, the domain is taken as empty.
    std::string middle = key.substr(std::strlen(kKeyPrefix));
    if (middle.size() >= 2 && middle.compare(middle.size() - 2, 2, "__") == 0) middle.resize(middle.size() - 2);
    rec.abiTag = middle.size() && middle.back() == '_' ? middle.substr(0, middle.size() - 1) : middle;
    for (const auto& [tag, users] : scan.modulesByTag)
        if (middle.rfind(tag + "_", 0) == 0) {
            rec.abiTag = tag;
            rec.domain = middle.substr(tag.size() + 1);
        }
    std::smatch m;
    static const std::regex version(R"(^v(\d+))");
    if (std::regex_search(rec.abiTag, m, version)) rec.version = std::stoi(m[1]);
    if (readTypeName(target, py, capsule).value_or("") != "PyCapsule") {
        rec.problem = "the value is not a capsule";
        return rec;
    }
    // PyCapsule: pointer, then name ("nb_internals").
    rec.address = target.readPointer(capsule + py.capsulePointer).value_or(0);
    uint64_t name = target.readPointer(capsule + py.capsulePointer + 8).value_or(0);
    if (!name || target.readCString(name, 32).value_or("") != "nb_internals") {
        rec.problem = "the capsule is not named nb_internals";
        return rec;
    }
    NbLayout layout;
    rec.layout = "table";
    auto users = scan.modulesByTag.find(rec.abiTag);
    if (users != scan.modulesByTag.end()) {
        for (size_t index : users->second) {
            const LoadedModule& mod = target.modules()[index];
            ModuleUse use;
            use.path = mod.path;
            if (auto sym = findModuleSymbol(mod, kInternalsStatic)) {
                use.confirmed = target.readPointer(mod.bias + sym->value).value_or(0) == rec.address;
                if (use.confirmed) use.how = "its nanobind::detail::internals static holds this record";
            }
            rec.modules.push_back(use);
            auto off = scan.typeMapOffsets.find(index);
            if (off != scan.typeMapOffsets.end()) {
                layout.typeMap = off->second;
                rec.layout = "dwarf and table";
            }
        }
    }
    if (!withTypes || !rec.address) return rec;
    uint64_t map = rec.address + layout.typeMap;
    uint64_t buckets = target.readPointer(map + layout.buckets).value_or(0);
    uint64_t count = target.readValue<uint64_t>(map + layout.bucketCount).value_or(0);
    if (!buckets || count > kMaxBuckets) return rec;
    std::set<uint64_t> seen;
    for (uint64_t b = 0; b < count; ++b) {
        uint64_t entry = buckets + b * layout.bucketSize;
        auto dist = target.readValue<int16_t>(entry + layout.bucketDistance);
        if (!dist) break;
        if (*dist < 0) continue;
        uint64_t data = target.readPointer(entry + layout.bucketValue + 8).value_or(0);
        if (!data || !seen.insert(data).second) continue;  // one class may be reached from several type_info
        RegisteredType t;
        uint64_t pyName = target.readPointer(data + layout.typeDataName).value_or(0);
        t.pythonName = pyName ? target.readCString(pyName, 256).value_or("?") : "?";
        uint64_t info = target.readPointer(data + layout.typeDataType).value_or(0);
        uint64_t mangled = info ? target.readPointer(info + 8).value_or(0) : 0;  // std::type_info::__name
        if (mangled) {
            std::string n = target.readCString(mangled, 1024).value_or("?");
            t.cppName = demangle(!n.empty() && n[0] == '*' ? n.substr(1) : n);
        }
        rec.types.push_back(t);
    }
    return rec;
}

}  // namespace pytstates
