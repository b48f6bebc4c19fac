// Struct layouts from DWARF, looked up per type name (libdw). The units' top-level type names are
// indexed in one pass, on the first lookup: each later name costs a hash lookup, not a walk.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbols/elf/elf_file.h"

struct Dwarf;

namespace pytstates {

class DwarfTypes {
public:
    // nullptr when the file has no usable .debug_info.
    static std::unique_ptr<DwarfTypes> open(std::shared_ptr<ElfFile> file);
    // Over a Dwarf handle someone else owns (a DebugSession's): not ended here.
    static std::unique_ptr<DwarfTypes> borrow(::Dwarf* dwarf, const std::string& path);
    ~DwarfTypes();
    DwarfTypes(const DwarfTypes&) = delete;
    DwarfTypes& operator=(const DwarfTypes&) = delete;

    // Offset of a (possibly nested, dot-separated) member, e.g. ("_ts", "cframe") or
    // ("pyruntimestate", "ceval.gil.locked"). typeName is a struct/union tag or a typedef name.
    std::optional<int64_t> memberOffset(const std::string& typeName, const std::string& memberPath);
    std::optional<uint64_t> sizeOf(const std::string& typeName);
    bool hasType(const std::string& typeName);

    const std::string& path() const { return path_; }

private:
    DwarfTypes(std::shared_ptr<ElfFile> file, ::Dwarf* dwarf, std::string path, bool owned)
        : file_(std::move(file)), dwarf_(dwarf), path_(std::move(path)), owned_(owned) {}
    bool findType(const std::string& name, void* dieOut);
    void buildIndex();

    std::shared_ptr<ElfFile> file_;
    ::Dwarf* dwarf_;
    std::string path_;
    bool owned_;
    std::map<std::string, std::shared_ptr<void>> cache_;  // name -> Dwarf_Die (or empty when absent)
    // Top-level namespace/struct/class/union/typedef DIEs by name, in unit order (the names point
    // into the Dwarf's own sections, which live as long as it).
    std::unordered_map<std::string_view, std::vector<uint64_t>> index_;
    bool indexed_ = false;
};

}  // namespace pytstates
