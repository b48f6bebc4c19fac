// SPDX-License-Identifier: Apache-2.0
// DwarfTypes' answers kept per build-id (type_cache.h), on the test executable's own DWARF: a second
// DwarfTypes answers the same without asking for a Dwarf handle; an entry that does not match, or
// PYTSTATES_NO_CACHE=1, makes it read DWARF again.
#include <gtest/gtest.h>
#include <elfutils/libdw.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/elf/type_cache.h"

namespace test_cache {
struct Node {
    int kind;
    Node* next;
    char name[13];
    long count;
};
}  // namespace test_cache

using namespace pytstates;

namespace {

class TypeCacheTest : public ::testing::Test {
protected:
    void SetUp() override {
        // GoogleTest's temporary directory honours TEST_TMPDIR and TMPDIR.
        std::string pattern = ::testing::TempDir() + "pytstates-cache-test-XXXXXX";
        ASSERT_TRUE(mkdtemp(pattern.data()));
        dir_ = pattern;
        setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
        unsetenv("PYTSTATES_NO_CACHE");
        std::string error;
        file_ = ElfFile::open("/proc/self/exe", &error);
        ASSERT_TRUE(file_) << error;
        ASSERT_FALSE(file_->buildId().empty()) << "the test executable has no build-id";
    }
    void TearDown() override {
        std::string cmd = "rm -rf '" + dir_ + "'";
        ASSERT_EQ(std::system(cmd.c_str()), 0);
        if (dwarf_) dwarf_end(dwarf_);
    }
    // A Dwarf handle on demand, counting how often one was asked for.
    std::function<::Dwarf*()> opener() {
        return [this]() -> ::Dwarf* {
            ++opened_;
            if (!dwarf_) dwarf_ = dwarf_begin_elf(file_->handle(), DWARF_C_READ, nullptr);
            return dwarf_;
        };
    }
    std::string entryPath() const { return dir_ + "/pytstates/dwarf/" + file_->buildId(); }
    void expectAnswers(DwarfTypes& types) {
        using test_cache::Node;
        EXPECT_EQ(types.memberOffset("test_cache::Node", "next"), static_cast<int64_t>(offsetof(Node, next)));
        EXPECT_EQ(types.memberOffset("test_cache::Node", "count"), static_cast<int64_t>(offsetof(Node, count)));
        EXPECT_EQ(types.sizeOf("test_cache::Node"), sizeof(Node));
        EXPECT_TRUE(types.hasType("test_cache::Node"));
        EXPECT_FALSE(types.memberOffset("test_cache::Node", "nope").has_value());
        EXPECT_FALSE(types.hasType("test_cache::Missing"));
        test_cache::Node n{};
        (void)n;
    }

    std::string dir_;
    std::shared_ptr<ElfFile> file_;
    ::Dwarf* dwarf_ = nullptr;
    int opened_ = 0;
};

}  // namespace

TEST_F(TypeCacheTest, SecondRunAnswersWithoutDwarf) {
    {
        auto types = DwarfTypes::cached(opener(), *file_);
        ASSERT_TRUE(types);
        expectAnswers(*types);
        EXPECT_FALSE(types->answeredFromCache());
    }
    EXPECT_EQ(opened_, 1);
    std::ifstream entry(entryPath());
    ASSERT_TRUE(entry) << "no cache entry at " << entryPath();
    opened_ = 0;
    {
        auto types = DwarfTypes::cached(opener(), *file_);
        ASSERT_TRUE(types);
        expectAnswers(*types);
        EXPECT_TRUE(types->answeredFromCache());
        EXPECT_EQ(opened_, 0) << "a cached answer opened DWARF";
        // A question the entry does not hold: DWARF is read, and the answer is added.
        EXPECT_EQ(types->memberOffset("test_cache::Node", "name"), static_cast<int64_t>(offsetof(test_cache::Node, name)));
        EXPECT_FALSE(types->answeredFromCache());
        EXPECT_EQ(opened_, 1);
    }
    opened_ = 0;
    auto types = DwarfTypes::cached(opener(), *file_);
    EXPECT_EQ(types->memberOffset("test_cache::Node", "name"), static_cast<int64_t>(offsetof(test_cache::Node, name)));
    EXPECT_EQ(opened_, 0);
}

TEST_F(TypeCacheTest, EntryForAnotherFileIsIgnored) {
    { expectAnswers(*DwarfTypes::cached(opener(), *file_)); }
    // The same build-id with another size (a file rewritten in place): a wrong answer planted in
    // the entry must not be believed.
    std::ifstream in(entryPath());
    std::stringstream text;
    text << in.rdbuf();
    std::string body = text.str();
    auto eol = body.find('\n');
    std::string header = body.substr(0, eol);
    header = header.substr(0, header.rfind(' ')) + " 12345";
    std::string planted = header + "\nmember\ttest_cache::Node\tnext\t999\n";
    std::ofstream(entryPath(), std::ios::trunc) << planted;
    opened_ = 0;
    auto types = DwarfTypes::cached(opener(), *file_);
    EXPECT_EQ(types->memberOffset("test_cache::Node", "next"), static_cast<int64_t>(offsetof(test_cache::Node, next)));
    EXPECT_FALSE(types->answeredFromCache());
    EXPECT_EQ(opened_, 1);
}

TEST_F(TypeCacheTest, OptOutNeitherReadsNorWrites) {
    setenv("PYTSTATES_NO_CACHE", "1", 1);
    { expectAnswers(*DwarfTypes::cached(opener(), *file_)); }
    EXPECT_FALSE(std::ifstream(entryPath())) << "an entry was written with PYTSTATES_NO_CACHE=1";
    unsetenv("PYTSTATES_NO_CACHE");
    { expectAnswers(*DwarfTypes::cached(opener(), *file_)); }
    setenv("PYTSTATES_NO_CACHE", "1", 1);
    opened_ = 0;
    auto types = DwarfTypes::cached(opener(), *file_);
    expectAnswers(*types);
    EXPECT_FALSE(types->answeredFromCache());
    EXPECT_EQ(opened_, 1);
    unsetenv("PYTSTATES_NO_CACHE");
}
