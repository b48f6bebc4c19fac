// SPDX-License-Identifier: Apache-2.0
// TypeSections on the suite's libpython debug file (python3-dbg; a GCC LTO build, whose
// DW_FORM_ref_addr appears on inlined code's abstract origins only): .debug_info is decompressed
// only as far as the lookups walk, and the answers are libdw's own over the whole file.
#include <gtest/gtest.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include <cstdlib>
#include <string>

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/elf/type_sections.h"

using namespace pytstates;

namespace {

std::shared_ptr<ElfFile> suiteDebugFile() {
    std::string error;
    auto library = ElfFile::open(PYTSTATES_SUITE_LIBPYTHON, &error);
    if (!library || library->buildId().size() < 3) return nullptr;
    const std::string& id = library->buildId();
    return ElfFile::open("/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug", &error);
}

}  // namespace

TEST(TypeSections, DecompressesUnitsAsWalked) {
    auto file = suiteDebugFile();
    ASSERT_TRUE(file) << "no debug file for " PYTSTATES_SUITE_LIBPYTHON " (python3-dbg)";
    auto sections = TypeSections::open(*file);
    ASSERT_TRUE(sections) << "its type sections are zlib-compressed on Debian";
    const uint64_t size = sections->infoSize();
    ASSERT_GT(size, 1u << 20);
    EXPECT_LT(sections->infoDecompressed(), size / 4) << "the first unit only, at open";
    // Unit by unit, as DwarfTypes walks them: each one decompressed before libdw reads it.
    Dwarf_Off offset = 0, next;
    size_t header, units = 0;
    uint64_t before = sections->infoDecompressed();
    while (sections->ensureUnit(offset) && dwarf_nextcu(sections->dwarf(), offset, &next, &header, nullptr, nullptr, nullptr) == 0) {
        EXPECT_GE(sections->infoDecompressed(), std::min<uint64_t>(next, size)) << "unit at " << offset;
        Dwarf_Die cu;
        ASSERT_TRUE(dwarf_offdie(sections->dwarf(), offset + header, &cu)) << "unit at " << offset;
        EXPECT_TRUE(dwarf_tag(&cu) == DW_TAG_compile_unit || dwarf_tag(&cu) == DW_TAG_partial_unit);
        offset = next;
        ++units;
    }
    EXPECT_GT(units, 10u);
    EXPECT_GT(sections->infoDecompressed(), before);
    EXPECT_EQ(sections->infoDecompressed(), size) << "every unit walked: the whole section";
    EXPECT_TRUE(sections->ensureUnit(size + 100)) << "past the end: nothing to do";
}

TEST(TypeSections, AnswersAsLibdwOverTheWholeFile) {
    auto file = suiteDebugFile();
    ASSERT_TRUE(file);
    setenv("PYTSTATES_NO_CACHE", "1", 1);
    auto lazy = DwarfTypes::cached([]() -> ::Dwarf* { return nullptr; }, *file);  // TypeSections, or nothing
    auto whole = DwarfTypes::open(file);
    ASSERT_TRUE(lazy);
    ASSERT_TRUE(whole);
    const std::pair<const char*, const char*> members[] = {
        {"_ts", "interp"}, {"_ts", "cframe"}, {"_ts", "thread_id"}, {"_ts", "native_thread_id"},
        {"_is", "tstate_head"}, {"_is", "next"}, {"pyruntimestate", "interpreters.head"},
        {"pyruntimestate", "gilstate.autoTSSkey"}, {"_PyInterpreterFrame", "previous"}, {"PyCodeObject", "co_qualname"},
        {"_ts", "no_such_member"},
    };
    size_t answered = 0;
    for (const auto& [type, member] : members) {
        auto expected = whole->memberOffset(type, member);
        EXPECT_EQ(lazy->memberOffset(type, member), expected) << type << "." << member;
        answered += expected.has_value();
    }
    EXPECT_GE(answered, 7u) << "names CPython 3.11 to 3.13 share";
    for (const char* type : {"_ts", "_is", "pyruntimestate", "_heaptypeobject", "PyThreadState"})
        EXPECT_EQ(lazy->sizeOf(type), whole->sizeOf(type)) << type;
    EXPECT_FALSE(lazy->hasType("no_such_type_anywhere"));
    unsetenv("PYTSTATES_NO_CACHE");
}
