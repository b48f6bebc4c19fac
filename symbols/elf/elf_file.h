// SPDX-License-Identifier: Apache-2.0
// One ELF file on disk, read through libelf (mmap'ed, nothing loaded whole).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct Elf;

namespace pytstates {

struct ElfSymbol {
    uint64_t value = 0;  // link-time address (st_value); for STT_TLS, the offset in the TLS block
    uint64_t size = 0;
    unsigned char type = 0;  // STT_*
    bool defined = false;
};

struct ElfSegment {
    uint64_t vaddr, memsz, offset, filesz;
    uint32_t flags;
};

struct ElfSection {
    std::string name;
    uint64_t addr = 0, offset = 0, size = 0;
    uint32_t type = 0;
};

class ElfFile {
public:
    // nullptr and *error set when the file is missing, not a regular file (a FIFO would block, a
    // directory is not a file) or not ELF.
    // Map: libelf maps the file (modules: symbols and sections are read in place). Read: libelf
    // reads headers with pread and nothing is mapped (a core of many GiB: touching its pages
    // through a mapping would count them all in pytstates' own memory).
    enum class Access { Map, Read };
    static std::shared_ptr<ElfFile> open(const std::string& path, std::string* error, Access access = Access::Map);
    // The same over an open descriptor, which the ElfFile then owns (closed even on failure);
    // `path` names it in messages.
    static std::shared_ptr<ElfFile> openFd(int fd, const std::string& path, std::string* error, Access access = Access::Map);
    ~ElfFile();
    ElfFile(const ElfFile&) = delete;
    ElfFile& operator=(const ElfFile&) = delete;

    const std::string& path() const { return path_; }
    uint16_t type() const { return type_; }  // ET_EXEC, ET_DYN, ET_CORE
    uint16_t machine() const { return machine_; }
    const std::string& buildId() const { return buildId_; }  // lowercase hex, empty if none
    const std::vector<ElfSegment>& segments() const { return segments_; }
    uint64_t firstLoadVaddr() const;  // page-aligned p_vaddr of the first PT_LOAD
    std::optional<ElfSegment> tlsSegment() const;

    // .dynsym (through its GNU hash table) first, then .symtab.
    std::optional<ElfSymbol> findSymbol(const std::string& name) const;
    std::optional<ElfSection> findSection(const std::string& name) const;
    bool hasDebugInfo() const { return findSection(".debug_info").has_value(); }
    std::optional<std::pair<std::string, uint32_t>> debugLink() const;  // .gnu_debuglink name, crc

    // Bytes at a link-time address, from the file's PT_LOAD contents; returns bytes copied.
    size_t readVaddr(uint64_t vaddr, void* buf, size_t len) const;
    // Raw file bytes (mmap'ed); nullptr beyond the file, or when the file is not mapped.
    const unsigned char* rawBytes(uint64_t offset, uint64_t len) const;
    // File bytes read with pread (no mapping grows): returns how many were read.
    size_t readAt(uint64_t offset, void* buf, size_t len) const;
    uint64_t fileSize() const { return rawSize_; }
    // Why the file cannot stand for what a process mapped (program headers outside the file, a
    // segment beyond its end: a truncated or corrupt copy); empty when it can. Not set for cores.
    const std::string& integrityProblem() const { return integrityProblem_; }

    ::Elf* handle() const { return elf_; }

private:
    ElfFile() = default;
    std::optional<ElfSymbol> lookupGnuHash(const std::string& name) const;
    std::optional<ElfSymbol> lookupLinear(uint32_t sectionType, const std::string& name) const;
    // Lets these file bytes leave the process' resident memory (a pass over a whole symbol
    // table: a second lookup's pass is rare, and reads them from the file again).
    void releasePages(uint64_t offset, uint64_t len) const;

    std::string path_;
    int fd_ = -1;
    ::Elf* elf_ = nullptr;
    const unsigned char* raw_ = nullptr;
    uint64_t rawSize_ = 0;
    uint16_t type_ = 0, machine_ = 0;
    std::string buildId_;
    std::string integrityProblem_;
    std::vector<ElfSegment> segments_;
    std::vector<ElfSection> sections_;
    mutable std::map<std::string, std::optional<ElfSymbol>> symbolCache_;
};

// Build-id from the bytes of a PT_NOTE/.note section ("GNU" NT_GNU_BUILD_ID), hex; empty if absent.
std::string buildIdFromNotes(const unsigned char* data, size_t size);

}  // namespace pytstates
