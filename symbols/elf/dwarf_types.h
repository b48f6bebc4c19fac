// SPDX-License-Identifier: Apache-2.0
// Struct layouts from DWARF, looked up per type name (libdw). The units' top-level type names are
// indexed in one pass, on the first lookup: each later name costs a hash lookup, not a walk.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbols/elf/elf_file.h"
#include "symbols/elf/type_cache.h"
#include "symbols/elf/type_sections.h"

struct Dwarf;

namespace pytstates {

class DwarfTypes {
public:
    // nullptr when the file has no usable .debug_info.
    static std::unique_ptr<DwarfTypes> open(std::shared_ptr<ElfFile> file);
    // Over a Dwarf handle someone else owns (a DebugSession's): not ended here.
    static std::unique_ptr<DwarfTypes> borrow(::Dwarf* dwarf, const std::string& path);
    // The same, with answers kept per build-id (type_cache.h): when `debugFile`'s are cached, no
    // DWARF is read unless a question is not in the cache. DWARF is then read through
    // TypeSections (only the sections types need, decompressed), else through the handle `open`
    // gives. nullptr when nothing is cached and no handle is had.
    static std::unique_ptr<DwarfTypes> cached(const std::function<::Dwarf*()>& open, const ElfFile& debugFile);
    ~DwarfTypes();
    DwarfTypes(const DwarfTypes&) = delete;
    DwarfTypes& operator=(const DwarfTypes&) = delete;

    // Offset of a (possibly nested, dot-separated) member, e.g. ("_ts", "cframe") or
    // ("pyruntimestate", "ceval.gil.locked"). typeName is a struct/union tag or a typedef name.
    std::optional<int64_t> memberOffset(const std::string& typeName, const std::string& memberPath);
    std::optional<uint64_t> sizeOf(const std::string& typeName);
    bool hasType(const std::string& typeName);

    const std::string& path() const { return path_; }
    // Frees the decompressed sections this reader made itself and what it indexed in them; the
    // answers stay, and a question not among them opens the sections again.
    void release();
    // Every question so far was answered by the cache (no DWARF was read).
    bool answeredFromCache() const { return loaded_ && !missed_; }

private:
    DwarfTypes(std::shared_ptr<ElfFile> file, ::Dwarf* dwarf, std::string path, bool owned)
        : file_(std::move(file)), dwarf_(dwarf), path_(std::move(path)), owned_(owned) {}
    bool findType(const std::string& name, void* dieOut);
    // Indexes units from the cursor on until `name` has an entry in a newly indexed unit (or the
    // units end); false when none was added.
    bool indexUntil(const std::string& name);
    // The cached answer to `question`; else computes it with DWARF and records it.
    std::optional<int64_t> answer(const std::string& question, const std::function<std::optional<int64_t>()>& compute);
    std::optional<int64_t> computeMemberOffset(const std::string& typeName, const std::string& memberPath);
    std::optional<uint64_t> computeSizeOf(const std::string& typeName);

    std::shared_ptr<ElfFile> file_;
    ::Dwarf* dwarf_;
    std::string path_;
    bool owned_;
    std::map<std::string, std::shared_ptr<void>> cache_;  // name -> Dwarf_Die (or empty when absent)
    // Top-level namespace/struct/class/union/typedef DIEs by name, in unit order (the names point
    // into the Dwarf's own sections, which live as long as it).
    std::unordered_map<std::string_view, std::vector<uint64_t>> index_;
    uint64_t nextUnit_ = 0;  // the next unit to index
    bool indexed_ = false;   // every unit is, but the LTO units
    std::vector<uint64_t> ltoUnits_;  // GCC's LTO units passed over (their DIEs' offsets), indexed last
    size_t nextLtoUnit_ = 0;
    // Cache: the file's build-id and size (empty id: no cache), the answers, how the handle is had.
    std::string buildId_;
    uint64_t fileSize_ = 0;
    TypeAnswers answers_;
    std::function<::Dwarf*()> open_;
    std::unique_ptr<TypeSections> sections_;  // the handle open_ gave, when it made its own
    bool loaded_ = false, missed_ = false, dirty_ = false;
};

}  // namespace pytstates
