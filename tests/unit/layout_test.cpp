// SPDX-License-Identifier: Apache-2.0
// The built-in layout tables held against the DWARF of real builds: every pyenv CPython on the
// machine and the suite's libpython3.X (Debian 12's 3.11, 13's 3.13; DWARF from python3-dbg). A
// missing build fails, naming it; a machine without pyenv at all (a fresh Debian 13) reports the
// pyenv cases not run, with that reason (ctest: gtest's SKIPPED).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <sys/stat.h>

#include "symbols/cpython/layout.h"
#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/module_files.h"

using namespace pytstates;

namespace {

std::string pyenvRoot() {
    if (const char* root = std::getenv("PYENV_ROOT")) return root;
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "/root") + "/.pyenv";
}

void expectTableMatchesDwarf(const std::string& path, int minor, int micro = -1) {
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0) << "missing on this machine: " << path;
    std::string error;
    auto file = ElfFile::open(path, &error);
    ASSERT_TRUE(file) << error;
    auto debug = findDebugFile(file, FileSearch{});
    auto dwarf = DwarfTypes::open(debug);
    ASSERT_TRUE(dwarf) << "no DWARF for " << path;
    CPythonLayout layout;
    ASSERT_TRUE(tableLayout(minor, false, Machine::X86_64, &layout, micro));
    ASSERT_TRUE(applyDwarfLayout(*dwarf, &layout));
    for (const auto& d : layout.disagreements) ADD_FAILURE() << path << ": " << d;
    EXPECT_NE(layout.tstateThreadId, kAbsent);
    EXPECT_NE(layout.interpThreadsHead, kAbsent);
    EXPECT_NE(layout.runtimeInterpretersHead, kAbsent);
    EXPECT_NE(layout.runtimeAutoTssKey, kAbsent);
    EXPECT_NE(layout.framePrevious, kAbsent);
}

}  // namespace

class PyenvLayout : public ::testing::TestWithParam<const char*> {};

TEST_P(PyenvLayout, BuiltInTableEqualsDwarf) {
    std::string version = GetParam();
    struct stat st;
    if (stat((pyenvRoot() + "/versions").c_str(), &st) != 0)
        GTEST_SKIP() << "no pyenv on this machine (" << pyenvRoot() << "/versions): the pyenv CPythons' layouts are not checked";
    std::string minor = version.substr(0, version.rfind('.'));
    expectTableMatchesDwarf(pyenvRoot() + "/versions/" + version + "/lib/libpython" + minor + ".so.1.0",
                            std::stoi(minor.substr(2)));
}

INSTANTIATE_TEST_SUITE_P(Versions, PyenvLayout, ::testing::Values("3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             std::string name = info.param;
                             for (char& c : name)
                                 if (c == '.') c = '_';
                             return name;
                         });

TEST(DebianLayout, BuiltInTableEqualsTheDebugPackagesDwarf) {
    // The suite's python3, as CMake found it (tests/unit/CMakeLists.txt).
    expectTableMatchesDwarf(PYTSTATES_SUITE_LIBPYTHON, PYTSTATES_SUITE_PYTHON_MINOR, PYTSTATES_SUITE_PYTHON_MICRO);
}
