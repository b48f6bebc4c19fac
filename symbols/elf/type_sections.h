// SPDX-License-Identifier: Apache-2.0
// A Dwarf handle over only the sections a type lookup reads (.debug_info, .debug_abbrev and the
// string sections), each decompressed into one in-memory ELF image. libdw's own dwarf_begin_elf
// decompresses every debug section it knows (line tables, location and range lists: half of a
// Debian debug file) before the first lookup. .debug_info is decompressed only as far as the
// lookups walk its units, when no DIE a type lookup reads can refer into another unit (see
// ensureUnit): the rest of the image is address space that is never touched.
#pragma once

#include <memory>
#include <vector>

#include "symbols/elf/elf_file.h"

struct Dwarf;
struct Elf;

namespace pytstates {

class TypeSections {
public:
    // nullptr when the file's type sections are not compressed (libdw maps them: nothing to
    // save), when they use what this does not decode (zstd, .zdebug), when the file refers to a
    // supplementary file (dwz), or when libdw refuses the image.
    static std::unique_ptr<TypeSections> open(const ElfFile& file);
    ~TypeSections();
    TypeSections(const TypeSections&) = delete;
    TypeSections& operator=(const TypeSections&) = delete;

    ::Dwarf* dwarf() const { return dwarf_; }

    // Decompresses .debug_info through the end of the unit that starts at `offset` (in the
    // section), as far as it is not yet: libdw may then read that unit. False when the section
    // ends there or the stream is damaged. Every unit is decompressed already when the file's
    // abbreviations let a type's DIE refer into another unit (DW_FORM_ref_addr and the like on
    // anything but code: LTO builds use it for inlined code's abstract origins only).
    bool ensureUnit(uint64_t offset);
    // How much of .debug_info is decompressed, and its whole size (for the statistics).
    uint64_t infoDecompressed() const;
    uint64_t infoSize() const;

private:
    struct LazyInfo;
    TypeSections() = default;
    unsigned char* image_ = nullptr;  // mapped anonymous memory: zero until written
    size_t size_ = 0;
    ::Elf* elf_ = nullptr;
    ::Dwarf* dwarf_ = nullptr;
    std::unique_ptr<LazyInfo> info_;
};

}  // namespace pytstates
