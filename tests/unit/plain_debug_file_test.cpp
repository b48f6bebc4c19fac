// SPDX-License-Identifier: Apache-2.0
// openDecompressedCopy on this test executable, its debug sections compressed by objcopy: every
// section of the copy holds the bytes of the executable's own (uncompressed) section.
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "symbols/elf/plain_debug_file.h"

using namespace pytstates;

namespace {

struct Section {
    GElf_Shdr header;
    std::string bytes;
};

// name -> header and bytes (as libelf gives them, without decompressing), by index order.
std::map<std::string, Section> sectionsOf(int fd, size_t* compressed) {
    std::map<std::string, Section> out;
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    EXPECT_TRUE(elf);
    if (!elf) return out;
    size_t shstrndx = 0;
    elf_getshdrstrndx(elf, &shstrndx);
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        Section s;
        gelf_getshdr(scn, &s.header);
        if (s.header.sh_flags & SHF_COMPRESSED) ++*compressed;
        if (s.header.sh_type != SHT_NOBITS)
            if (Elf_Data* d = elf_rawdata(scn, nullptr); d && d->d_buf) s.bytes.assign(static_cast<const char*>(d->d_buf), d->d_size);
        out[elf_strptr(elf, shstrndx, s.header.sh_name)] = s;
    }
    elf_end(elf);
    return out;
}

}  // namespace

TEST(PlainDebugFile, DecompressedCopyHoldsTheOriginalSections) {
    // GoogleTest's temporary directory honours TEST_TMPDIR and TMPDIR.
    std::string pattern = ::testing::TempDir() + "plain-debug-XXXXXX";
    ASSERT_TRUE(mkdtemp(pattern.data()));
    const std::string dir = pattern;
    std::string packed = std::string(dir) + "/packed";
    std::string command = "objcopy --compress-debug-sections=zlib /proc/" + std::to_string(getpid()) + "/exe " + packed;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;

    int original = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    int packedFd = ::open(packed.c_str(), O_RDONLY | O_CLOEXEC);
    int copy = openDecompressedCopy(packed);
    ASSERT_GE(original, 0);
    ASSERT_GE(packedFd, 0);
    ASSERT_GE(copy, 0);
    size_t inOriginal = 0, inPacked = 0, inCopy = 0;
    auto want = sectionsOf(original, &inOriginal);
    auto packedSections = sectionsOf(packedFd, &inPacked);
    auto got = sectionsOf(copy, &inCopy);
    EXPECT_EQ(inOriginal, 0u);
    EXPECT_GT(inPacked, 3u);  // .debug_info, .debug_abbrev, .debug_line at least
    EXPECT_EQ(inCopy, 0u);
    ASSERT_TRUE(want.count(".debug_info"));
    ASSERT_EQ(got.size(), packedSections.size());
    // A compressed section holds what the executable holds; any other one, what objcopy wrote.
    for (const auto& [name, p] : packedSections) {
        SCOPED_TRACE(name);
        ASSERT_TRUE(got.count(name));
        const Section& g = got.at(name);
        bool wasCompressed = p.header.sh_flags & SHF_COMPRESSED;
        const Section& w = wasCompressed ? want.at(name) : p;
        EXPECT_EQ(g.header.sh_type, w.header.sh_type);
        EXPECT_EQ(g.header.sh_flags, w.header.sh_flags);
        EXPECT_EQ(g.header.sh_size, w.header.sh_size);
        EXPECT_EQ(g.header.sh_addr, w.header.sh_addr);
        EXPECT_TRUE(g.bytes == w.bytes);
    }
    ::close(original);
    ::close(packedFd);
    ::close(copy);
    ::unlink(packed.c_str());
    ::rmdir(dir.c_str());
}

TEST(PlainDebugFile, NoCopyOfAFileWithoutCompressedSections) {
    EXPECT_EQ(openDecompressedCopy("/proc/self/exe"), -1);
    EXPECT_EQ(openDecompressedCopy("/nonexistent/file"), -1);
}
