#include "symbols/elf/dwarf_types.h"

#include <dwarf.h>
#include <elfutils/libdw.h>

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

DwarfTypes::~DwarfTypes() {
    if (dwarf_ && owned_) dwarf_end(dwarf_);
}

namespace {

std::vector<std::string> splitScope(const std::string& name) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t pos; (pos = name.find("::", start)) != std::string::npos; start = pos + 2) parts.push_back(name.substr(start, pos - start));
    parts.push_back(name.substr(start));
    return parts;
}

// Searches the children of `parent` for scope[depth..]: namespaces for all but the last part,
// then a complete struct/class/union/typedef with the last name.
bool searchScope(Dwarf_Die* parent, const std::vector<std::string>& scope, size_t depth, Dwarf_Die* out) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return false;
    bool last = depth + 1 == scope.size();
    do {
        int tag = dwarf_tag(&child);
        const char* n = dwarf_diename(&child);
        if (!n || scope[depth] != n) continue;
        if (!last) {
            if ((tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type) &&
                searchScope(&child, scope, depth + 1, out))
                return true;
            continue;
        }
        if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type && tag != DW_TAG_typedef && tag != DW_TAG_union_type)
            continue;
        Dwarf_Die resolved = child;
        if (!stripQualifiers(&resolved) || dwarf_hasattr(&resolved, DW_AT_declaration)) continue;
        *out = resolved;
        return true;
    } while (dwarf_siblingof(&child, &child) == 0);
    return false;
}

}  // namespace

bool DwarfTypes::findType(const std::string& name, void* dieOut) {
    auto it = cache_.find(name);
    if (it != cache_.end()) {
        if (!it->second) return false;
        std::memcpy(dieOut, it->second.get(), sizeof(Dwarf_Die));
        return true;
    }
    // Visit only the top-level DIEs of each unit (and the namespaces the name passes through).
    std::vector<std::string> scope = splitScope(name);
    Dwarf_Off off = 0, next;
    size_t headerSize;
    while (dwarf_nextcu(dwarf_, off, &next, &headerSize, nullptr, nullptr, nullptr) == 0) {
        Dwarf_Die cu, found;
        if (dwarf_offdie(dwarf_, off + headerSize, &cu) && searchScope(&cu, scope, 0, &found)) {
            auto stored = std::make_shared<Dwarf_Die>(found);
            cache_[name] = stored;
            std::memcpy(dieOut, stored.get(), sizeof(Dwarf_Die));
            return true;
        }
        off = next;
    }
    cache_[name] = nullptr;
    return false;
}

bool DwarfTypes::hasType(const std::string& typeName) {
    Dwarf_Die die;
    return findType(typeName, &die);
}

std::optional<int64_t> DwarfTypes::memberOffset(const std::string& typeName, const std::string& memberPath) {
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

std::optional<uint64_t> DwarfTypes::sizeOf(const std::string& typeName) {
    Dwarf_Die die;
    if (!findType(typeName, &die)) return std::nullopt;
    Dwarf_Word size;
    Dwarf_Attribute attr;
    if (!dwarf_attr_integrate(&die, DW_AT_byte_size, &attr) || dwarf_formudata(&attr, &size) != 0)
        return std::nullopt;
    return size;
}

}  // namespace pytstates
