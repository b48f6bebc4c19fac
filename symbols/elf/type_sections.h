// SPDX-License-Identifier: Apache-2.0
// A Dwarf handle over only the sections a type lookup reads (.debug_info, .debug_abbrev and the
// string sections), each decompressed once into one in-memory ELF image. libdw's own
// dwarf_begin_elf decompresses every debug section it knows (line tables, location and range
// lists: half of a Debian debug file) before the first lookup.
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

private:
    TypeSections() = default;
    std::unique_ptr<unsigned char[]> image_;  // not zero-filled: every byte is written
    size_t size_ = 0;
    ::Elf* elf_ = nullptr;
    ::Dwarf* dwarf_ = nullptr;
};

}  // namespace pytstates
