// SPDX-License-Identifier: Apache-2.0
// CoreFile on cores written by the test: the notes and segments a kernel writes, and the
// truncations a copy can suffer.
#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "symbols/core/core_file.h"

using namespace pytstates;

namespace {

void note(std::vector<uint8_t>& out, const char* name, uint32_t type, const std::vector<uint8_t>& desc) {
    uint32_t namesz = static_cast<uint32_t>(std::strlen(name) + 1), descsz = static_cast<uint32_t>(desc.size());
    auto put32 = [&](uint32_t v) { out.insert(out.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); };
    put32(namesz);
    put32(descsz);
    put32(type);
    out.insert(out.end(), name, name + namesz);
    while (out.size() % 4) out.push_back(0);
    out.insert(out.end(), desc.begin(), desc.end());
    while (out.size() % 4) out.push_back(0);
}

template <typename T>
void put(std::vector<uint8_t>& v, size_t at, T value) {
    std::memcpy(v.data() + at, &value, sizeof value);
}

// Two threads, auxv, one NT_FILE mapping, and two PT_LOADs: one whole, one with p_filesz < p_memsz.
std::vector<uint8_t> syntheticCore() {
    std::vector<uint8_t> notes;
    for (int i = 0; i < 2; ++i) {
        std::vector<uint8_t> prstatus(336);
        put<int32_t>(prstatus, 32, 1000 + i);                      // pr_pid
        put<uint64_t>(prstatus, 112 + 8 * 21, 0x7f0000001000 + i);  // fs_base
        put<uint64_t>(prstatus, 112 + 8 * 16, 0x401000 + i);        // rip
        note(notes, "CORE", NT_PRSTATUS, prstatus);
    }
    std::vector<uint8_t> auxv(48);
    put<uint64_t>(auxv, 0, AT_PHDR);
    put<uint64_t>(auxv, 8, 0x400040);
    put<uint64_t>(auxv, 16, AT_ENTRY);
    put<uint64_t>(auxv, 24, 0x401000);
    note(notes, "CORE", NT_AUXV, auxv);
    std::vector<uint8_t> file(16 + 24);
    put<uint64_t>(file, 0, 1);
    put<uint64_t>(file, 8, 4096);
    put<uint64_t>(file, 16, 0x400000);
    put<uint64_t>(file, 24, 0x402000);
    put<uint64_t>(file, 32, 2);  // page offset
    const char path[] = "/usr/bin/example";
    file.insert(file.end(), path, path + sizeof path);
    note(notes, "CORE", 0x46494c45 /* NT_FILE */, file);

    size_t phoff = sizeof(Elf64_Ehdr), nph = 3;
    size_t notesOff = phoff + nph * sizeof(Elf64_Phdr);
    size_t data1 = (notesOff + notes.size() + 4095) & ~size_t(4095), data2 = data1 + 4096;
    std::vector<uint8_t> core(data2 + 4096);
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_CORE;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = phoff;
    eh.e_ehsize = sizeof eh;
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = static_cast<Elf64_Half>(nph);
    std::memcpy(core.data(), &eh, sizeof eh);
    Elf64_Phdr ph[3]{};
    ph[0].p_type = PT_NOTE;
    ph[0].p_offset = notesOff;
    ph[0].p_filesz = notes.size();
    ph[1].p_type = PT_LOAD;
    ph[1].p_vaddr = 0x600000;
    ph[1].p_offset = data1;
    ph[1].p_filesz = ph[1].p_memsz = 4096;
    ph[2].p_type = PT_LOAD;
    ph[2].p_vaddr = 0x700000;
    ph[2].p_offset = data2;
    ph[2].p_filesz = 2048;
    ph[2].p_memsz = 8192;
    std::memcpy(core.data() + phoff, ph, sizeof ph);
    std::memcpy(core.data() + notesOff, notes.data(), notes.size());
    for (size_t i = 0; i < 4096; ++i) core[data1 + i] = static_cast<uint8_t>(i);
    for (size_t i = 0; i < 4096; ++i) core[data2 + i] = static_cast<uint8_t>(0xff - (i & 0xff));
    return core;
}

std::string writeTemp(const std::vector<uint8_t>& bytes, size_t size) {
    std::string pattern = (std::filesystem::temp_directory_path() / "pytstates-core-test-XXXXXX").string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = mkstemp(name.data());
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, bytes.data(), size), static_cast<ssize_t>(size));
    close(fd);
    return name.data();
}

}  // namespace

TEST(CoreFile, ReadsThreadsAuxvFilesAndSegments) {
    auto bytes = syntheticCore();
    std::string path = writeTemp(bytes, bytes.size());
    CoreFile core(path);
    ASSERT_EQ(core.threads().size(), 2u);
    EXPECT_EQ(core.threads()[0].lwp, 1000);
    EXPECT_EQ(core.threads()[1].threadPointer, 0x7f0000001001u);
    EXPECT_EQ(core.threads()[0].pc, 0x401000u);
    EXPECT_EQ(core.auxValue(AT_PHDR), 0x400040u);
    EXPECT_EQ(core.auxValue(AT_ENTRY), 0x401000u);
    ASSERT_EQ(core.mappedFiles().size(), 1u);
    EXPECT_EQ(core.mappedFiles()[0].path, "/usr/bin/example");
    EXPECT_EQ(core.mappedFiles()[0].fileOffset, 2u * 4096);
    uint8_t buf[16];
    ASSERT_EQ(core.read(0x600010, buf, 16), 16u);
    EXPECT_EQ(buf[0], 0x10);
    EXPECT_EQ(core.read(0x700000 + 2040, buf, 16), 8u);  // p_filesz ends inside the read
    EXPECT_EQ(core.read(0x500000, buf, 16), 0u);
    EXPECT_EQ(core.leftOutFrom(0x700000 + 2048), 8192u - 2048);  // left out by the dumper
    EXPECT_EQ(core.leftOutFrom(0x600010), 0u);                   // dumped
    EXPECT_FALSE(core.truncated());
    unlink(path.c_str());
}

TEST(CoreFile, RefusesFilesThatAreNotCores) {
    std::string text = writeTemp(std::vector<uint8_t>(100, 'x'), 100);
    EXPECT_THROW(CoreFile{text}, std::runtime_error);
    unlink(text.c_str());
    EXPECT_THROW(CoreFile{"/proc/self/exe"}, std::runtime_error);
    EXPECT_THROW(CoreFile{"/nonexistent"}, std::runtime_error);
}

TEST(CoreFile, TruncatedCoresAreReportedAndNeverReadPastTheEnd) {
    auto bytes = syntheticCore();
    size_t loadStart = bytes.size() - 2 * 4096;
    std::string path = writeTemp(bytes, loadStart + 100);  // cut inside the first PT_LOAD
    CoreFile core(path);
    EXPECT_TRUE(core.truncated());
    uint8_t buf[256];
    EXPECT_EQ(core.read(0x600000, buf, sizeof buf), 100u);
    EXPECT_EQ(core.read(0x700000, buf, sizeof buf), 0u);
    EXPECT_EQ(core.leftOutFrom(0x600200), 0u);  // lost to truncation: not to be filled from files
    unlink(path.c_str());
}

TEST(CoreFile, EveryTruncationEitherThrowsOrReadsSafely) {
    auto bytes = syntheticCore();
    for (size_t size = 0; size < bytes.size(); size += 7) {
        std::string path = writeTemp(bytes, size);
        try {
            CoreFile core(path);
            uint8_t buf[64];
            for (const auto& s : core.segments()) core.read(s.vaddr, buf, sizeof buf);
        } catch (const std::runtime_error&) {
        }
        unlink(path.c_str());
    }
}
