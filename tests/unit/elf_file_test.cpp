// SPDX-License-Identifier: Apache-2.0
// ElfFile and DwarfTypes on the test executable itself: symbol values and struct layouts held
// against what the compiler and the dynamic linker say about the running process.
#include <gtest/gtest.h>
#include <link.h>

#include <cstddef>
#include <string>

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"

extern "C" {
int pytstates_test_exported_marker = 42;  // in .dynsym (the test links with -rdynamic)
}

namespace test_layout {
struct Inner {
    char tag;
    double value;
};
struct Outer {
    int first;
    Inner inner;
    union {
        long asLong;
        char asBytes[24];
    };
    void* last;
};
}  // namespace test_layout

using namespace pytstates;

namespace {

uint64_t executableBias() {
    uint64_t bias = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            *static_cast<uint64_t*>(out) = info->dlpi_addr;
            return 1;  // the first object is the executable
        },
        &bias);
    return bias;
}

std::shared_ptr<ElfFile> self() {
    std::string error;
    auto f = ElfFile::open("/proc/self/exe", &error);
    EXPECT_TRUE(f) << error;
    return f;
}

}  // namespace

TEST(ElfFile, FindsAnExportedSymbolThroughTheGnuHashTable) {
    auto f = self();
    auto sym = f->findSymbol("pytstates_test_exported_marker");
    ASSERT_TRUE(sym.has_value());
    EXPECT_EQ(executableBias() + sym->value, reinterpret_cast<uint64_t>(&pytstates_test_exported_marker));
    EXPECT_EQ(sym->size, sizeof(int));
}

TEST(ElfFile, ReadsInitialBytesAtALinkTimeAddress) {
    auto f = self();
    auto sym = f->findSymbol("pytstates_test_exported_marker");
    ASSERT_TRUE(sym.has_value());
    int initial = 0;
    ASSERT_EQ(f->readVaddr(sym->value, &initial, sizeof initial), sizeof initial);
    EXPECT_EQ(initial, 42);
}

TEST(ElfFile, FindsLibcsThreadDbDescriptors) {
    std::string error;
    auto libc = ElfFile::open("/lib/x86_64-linux-gnu/libc.so.6", &error);
    ASSERT_TRUE(libc) << error;
    EXPECT_TRUE(libc->findSymbol("__pthread_keys").has_value());
    EXPECT_TRUE(libc->findSymbol("_thread_db_pthread_specific").has_value());
    EXPECT_FALSE(libc->findSymbol("no_such_symbol_anywhere").has_value());
    EXPECT_EQ(libc->buildId().size(), 40u);
}

TEST(ElfFile, RefusesMissingAndNonElfFiles) {
    std::string error;
    EXPECT_FALSE(ElfFile::open("/nonexistent/file", &error));
    EXPECT_NE(error.find("No such file"), std::string::npos);
    EXPECT_FALSE(ElfFile::open("/proc/self/status", &error));
    EXPECT_NE(error.find("not an ELF file"), std::string::npos);
}

TEST(DwarfTypes, MemberOffsetsEqualTheCompilers) {
    auto dwarf = DwarfTypes::open(self());
    ASSERT_TRUE(dwarf);
    using test_layout::Outer;
    EXPECT_EQ(dwarf->memberOffset("test_layout::Outer", "first"), static_cast<int64_t>(offsetof(Outer, first)));
    EXPECT_EQ(dwarf->memberOffset("test_layout::Outer", "inner.value"),
              static_cast<int64_t>(offsetof(Outer, inner) + offsetof(test_layout::Inner, value)));
    EXPECT_EQ(dwarf->memberOffset("test_layout::Outer", "asBytes"), static_cast<int64_t>(offsetof(Outer, asBytes)));
    EXPECT_EQ(dwarf->memberOffset("test_layout::Outer", "last"), static_cast<int64_t>(offsetof(Outer, last)));
    EXPECT_EQ(dwarf->sizeOf("test_layout::Outer"), sizeof(Outer));
    EXPECT_FALSE(dwarf->memberOffset("test_layout::Outer", "nope").has_value());
    EXPECT_FALSE(dwarf->memberOffset("test_layout::Missing", "first").has_value());
    test_layout::Outer o{};
    (void)o;
}
