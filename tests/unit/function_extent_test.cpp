// SPDX-License-Identifier: Apache-2.0
// functionExtentAt on the suite's own libpython: the extent .eh_frame_hdr gives each function
// starts at the function's symbol and holds all of its bytes (the symbol's size).
#include <gtest/gtest.h>

#include "symbols/elf/elf_file.h"
#include "symbols/elf/function_extent.h"

using namespace pytstates;

TEST(FunctionExtent, LibpythonFunctions) {
    std::string error;
    auto elf = ElfFile::open(PYTSTATES_SUITE_LIBPYTHON, &error);
    ASSERT_TRUE(elf) << error;
    for (const char* name : {"PyThreadState_New", "PyThreadState_Clear", "PyEval_RestoreThread", "PyThread_tss_set"}) {
        auto sym = elf->findSymbol(name);
        ASSERT_TRUE(sym && sym->value && sym->size) << name;
        auto extent = functionExtentAt(*elf, sym->value);
        ASSERT_TRUE(extent) << name << " has an FDE starting at its symbol";
        EXPECT_EQ(extent->first, sym->value) << name;
        EXPECT_GE(extent->second, sym->value + sym->size) << name;
        EXPECT_LT(extent->second, sym->value + sym->size + 64) << name << ": ends where the next function begins";
        EXPECT_FALSE(functionExtentAt(*elf, sym->value + 1)) << name << ": no FDE starts inside it";
    }
}
