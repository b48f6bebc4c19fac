// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/dwarf_types.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

namespace pytstates {

namespace {

// Follows typedef/const/volatile to the underlying type DIE.
bool stripQualifiers(Dwarf_Die* die) {
    for (int guard = 0; guard < 32; ++guard) {
        int tag = dwarf_tag(die);
        if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
            tag != DW_TAG_atomic_type)
            return true;
        Dwarf_Attribute attr;
        if (!dwarf_attr_integrate(die, DW_AT_type, &attr) || !dwarf_formref_die(&attr, die)) return false;
    }
    return false;
}

std::optional<int64_t> memberLocation(Dwarf_Die* member) {
    Dwarf_Attribute attr;
    if (!dwarf_attr_integrate(member, DW_AT_data_member_location, &attr)) return 0;  // union members
    Dwarf_Word value;
    if (dwarf_formudata(&attr, &value) == 0) return static_cast<int64_t>(value);
    return std::nullopt;  // location expressions: not used by GCC/Clang for C structs
}

// Finds a named member in a struct/union, looking through anonymous members. Adds its offset.
bool findMember(Dwarf_Die* aggregate, const std::string& name, Dwarf_Die* out, int64_t* offset, int depth = 0) {
    if (depth > 8) return false;
    Dwarf_Die child;
    if (dwarf_child(aggregate, &child) != 0) return false;
    do {
        if (dwarf_tag(&child) != DW_TAG_member && dwarf_tag(&child) != DW_TAG_inheritance) continue;
        if (dwarf_hasattr(&child, DW_AT_declaration)) continue;  // a C++ static member
        const char* n = dwarf_diename(&child);
        auto loc = memberLocation(&child);
        if (!loc) continue;
        if (n && name == n) {
            *out = child;
            *offset += *loc;
            return true;
        }
        if (!n) {  // anonymous struct/union: search inside it
            Dwarf_Attribute attr;
            Dwarf_Die type;
            if (dwarf_attr_integrate(&child, DW_AT_type, &attr) && dwarf_formref_die(&attr, &type) &&
                stripQualifiers(&type)) {
                int64_t inner = *offset + *loc;
                if (findMember(&type, name, out, &inner, depth + 1)) {
                    *offset = inner;
                    return true;
                }
            }
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return false;
}

}  // namespace

std::unique_ptr<DwarfTypes> DwarfTypes::open(std::shared_ptr<ElfFile> file) {
    if (!file || !file->hasDebugInfo()) return nullptr;
    Dwarf* dwarf = dwarf_begin_elf(file->handle(), DWARF_C_READ, nullptr);
    if (!dwarf) return nullptr;
    std::string path = file->path();
    return std::unique_ptr<DwarfTypes>(new DwarfTypes(std::move(file), dwarf, path, true));
}

std::unique_ptr<DwarfTypes> DwarfTypes::borrow(::Dwarf* dwarf, const std::string& path) {
    if (!dwarf) return nullptr;
    return std::unique_ptr<DwarfTypes>(new DwarfTypes(nullptr, dwarf, path, false));
}

std::unique_ptr<DwarfTypes> DwarfTypes::cached(const std::function<::Dwarf*()>& open, const ElfFile& debugFile) {
    auto answers = loadTypeAnswers(debugFile.buildId(), debugFile.fileSize());
    std::unique_ptr<DwarfTypes> types(new DwarfTypes(nullptr, nullptr, debugFile.path(), false));
    DwarfTypes* self = types.get();
    const ElfFile* file = &debugFile;
    types->open_ = [self, file, open]() -> ::Dwarf* {
        self->sections_ = TypeSections::open(*file);
        return self->sections_ ? self->sections_->dwarf() : open();
    };
    if (!answers && !(types->dwarf_ = types->open_())) return nullptr;
    types->buildId_ = debugFile.buildId();
    types->fileSize_ = debugFile.fileSize();
    if (answers) {
        types->answers_ = std::move(*answers);
        types->loaded_ = true;
    }
    return types;
}

DwarfTypes::~DwarfTypes() {
    if (dirty_ && !buildId_.empty()) storeTypeAnswers(buildId_, fileSize_, answers_);
    if (dwarf_ && owned_) dwarf_end(dwarf_);
}

void DwarfTypes::release() {
    if (!sections_) return;  // reads a DWARF handle someone else owns, or none yet
    cache_.clear();
    index_.clear();
    ltoUnits_.clear();
    nextUnit_ = 0;
    nextLtoUnit_ = 0;
    indexed_ = false;
    dwarf_ = nullptr;
    sections_.reset();
}

std::optional<int64_t> DwarfTypes::answer(const std::string& question, const std::function<std::optional<int64_t>()>& compute) {
    auto it = answers_.find(question);
    if (it != answers_.end()) {
        if (it->second == "-") return std::nullopt;
        char* end = nullptr;
        long long value = std::strtoll(it->second.c_str(), &end, 10);
        if (end && *end == 0 && !it->second.empty()) return value;
    }
    missed_ = true;
    if (!dwarf_ && open_) dwarf_ = open_();
    if (!dwarf_) return std::nullopt;  // no DWARF to ask: not an answer to keep
    std::optional<int64_t> value = compute();
    if (!buildId_.empty()) {
        answers_[question] = value ? std::to_string(*value) : "-";
        dirty_ = true;
    }
    return value;
}

namespace {

std::vector<std::string> splitScope(const std::string& name) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t pos; (pos = name.find("::", start)) != std::string::npos; start = pos + 2) parts.push_back(name.substr(start, pos - start));
    parts.push_back(name.substr(start));
    return parts;
}

bool searchScope(Dwarf_Die* parent, const std::vector<std::string>& scope, size_t depth, Dwarf_Die* out);

bool isIndexedTag(int tag) {
    return tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_typedef ||
           tag == DW_TAG_union_type;
}

// `die`, named scope[depth]: a namespace/struct/class leading to scope[depth+1..], or, for the last
// part, a complete struct/class/union/typedef.
bool matchScope(Dwarf_Die* die, const std::vector<std::string>& scope, size_t depth, Dwarf_Die* out) {
    int tag = dwarf_tag(die);
    if (depth + 1 < scope.size())
        return (tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type) &&
               searchScope(die, scope, depth + 1, out);
    if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type && tag != DW_TAG_typedef && tag != DW_TAG_union_type)
        return false;
    Dwarf_Die resolved = *die;
    if (!stripQualifiers(&resolved) || dwarf_hasattr(&resolved, DW_AT_declaration)) return false;
    *out = resolved;
    return true;
}

// Searches the children of `parent` for scope[depth..].
bool searchScope(Dwarf_Die* parent, const std::vector<std::string>& scope, size_t depth, Dwarf_Die* out) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return false;
    do {
        // The tag first: only these can match, and the name of anything else (code) may lead into
        // another unit (TypeSections::ensureUnit).
        if (!isIndexedTag(dwarf_tag(&child))) continue;
        const char* n = dwarf_diename(&child);
        if (n && scope[depth] == n && matchScope(&child, scope, depth, out)) return true;
    } while (dwarf_siblingof(&child, &child) == 0);
    return false;
}

}  // namespace

// One pass over the units' top-level DIEs, as far as lookups need: a name is looked up among the
// units indexed so far, then the pass goes on until a unit has it. The tag is checked before the
// name: most top-level DIEs are functions and variables, whose names would follow abstract
// origins into other units. GCC's LTO units ("<artificial>") come first and hold code, their types
// being the compile units' that follow: they are indexed last, once the others lack a name
// (Debian's python3.11 has 5.6 MB of them before its first struct _ts).
bool DwarfTypes::indexUntil(const std::string& name) {
    Dwarf_Off next;
    size_t headerSize;
    auto indexUnit = [&](Dwarf_Die* cu) {
        bool added = false;
        Dwarf_Die child;
        if (dwarf_child(cu, &child) != 0) return false;
        do {
            if (!isIndexedTag(dwarf_tag(&child))) continue;
            // The DIE's own name: a type's is never another DIE's (dwarf_diename would look
            // through abstract origins for every anonymous struct of a typedef).
            Dwarf_Attribute attr;
            if (const char* n = dwarf_attr(&child, DW_AT_name, &attr) ? dwarf_formstring(&attr) : nullptr) {
                index_[n].push_back(dwarf_dieoffset(&child));
                added = added || name == n;
            }
        } while (dwarf_siblingof(&child, &child) == 0);
        return added;
    };
    while (!indexed_) {
        if ((sections_ && !sections_->ensureUnit(nextUnit_)) ||
            dwarf_nextcu(dwarf_, nextUnit_, &next, &headerSize, nullptr, nullptr, nullptr) != 0) {
            indexed_ = true;
            break;
        }
        Dwarf_Die cu;
        bool have = dwarf_offdie(dwarf_, nextUnit_ + headerSize, &cu) != nullptr;
        nextUnit_ = next;
        if (!have) continue;
        const char* unitName = dwarf_diename(&cu);
        if (unitName && std::strcmp(unitName, "<artificial>") == 0) {
            ltoUnits_.push_back(dwarf_dieoffset(&cu));
            continue;
        }
        if (indexUnit(&cu)) return true;
    }
    while (nextLtoUnit_ < ltoUnits_.size()) {
        Dwarf_Die cu;
        if (dwarf_offdie(dwarf_, ltoUnits_[nextLtoUnit_++], &cu) && indexUnit(&cu)) return true;
    }
    return false;
}

bool DwarfTypes::findType(const std::string& name, void* dieOut) {
    auto it = cache_.find(name);
    if (it != cache_.end()) {
        if (!it->second) return false;
        std::memcpy(dieOut, it->second.get(), sizeof(Dwarf_Die));
        return true;
    }
    // The first top-level DIE of that name, in unit order, that leads to a complete definition:
    // the one a walk over the units would find first.
    std::vector<std::string> scope = splitScope(name);
    size_t tried = 0;
    do {
        auto entries = index_.find(scope[0]);
        if (entries == index_.end()) continue;
        for (; tried < entries->second.size(); ++tried) {
            Dwarf_Die die, found;
            if (!dwarf_offdie(dwarf_, entries->second[tried], &die) || !matchScope(&die, scope, 0, &found)) continue;
            auto stored = std::make_shared<Dwarf_Die>(found);
            cache_[name] = stored;
            std::memcpy(dieOut, stored.get(), sizeof(Dwarf_Die));
            return true;
        }
    } while (indexUntil(scope[0]));
    cache_[name] = nullptr;
    return false;
}

bool DwarfTypes::hasType(const std::string& typeName) {
    return answer("type\t" + typeName, [&]() -> std::optional<int64_t> {
               Dwarf_Die die;
               return findType(typeName, &die) ? std::optional<int64_t>(1) : std::nullopt;
           }).has_value();
}

std::optional<int64_t> DwarfTypes::memberOffset(const std::string& typeName, const std::string& memberPath) {
    return answer("member\t" + typeName + "\t" + memberPath, [&] { return computeMemberOffset(typeName, memberPath); });
}

std::optional<uint64_t> DwarfTypes::sizeOf(const std::string& typeName) {
    auto size = answer("size\t" + typeName, [&]() -> std::optional<int64_t> {
        auto s = computeSizeOf(typeName);
        if (s) return static_cast<int64_t>(*s);
        return std::nullopt;
    });
    if (size) return static_cast<uint64_t>(*size);
    return std::nullopt;
}

std::optional<int64_t> DwarfTypes::computeMemberOffset(const std::string& typeName, const std::string& memberPath) {
    Dwarf_Die current;
    if (!findType(typeName, &current)) return std::nullopt;
    int64_t offset = 0;
    std::stringstream parts(memberPath);
    std::string part;
    bool first = true;
    while (std::getline(parts, part, '.')) {
        if (!first) {
            Dwarf_Attribute attr;
            Dwarf_Die type;
            if (!dwarf_attr_integrate(&current, DW_AT_type, &attr) || !dwarf_formref_die(&attr, &type) ||
                !stripQualifiers(&type))
                return std::nullopt;
            current = type;
        }
        first = false;
        Dwarf_Die member;
        if (!findMember(&current, part, &member, &offset)) return std::nullopt;
        current = member;
    }
    return offset;
}

std::optional<uint64_t> DwarfTypes::computeSizeOf(const std::string& typeName) {
    Dwarf_Die die;
    if (!findType(typeName, &die)) return std::nullopt;
    Dwarf_Word size;
    Dwarf_Attribute attr;
    if (!dwarf_attr_integrate(&die, DW_AT_byte_size, &attr) || dwarf_formudata(&attr, &size) != 0)
        return std::nullopt;
    return size;
}

}  // namespace pytstates
