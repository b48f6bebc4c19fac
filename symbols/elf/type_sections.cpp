// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/type_sections.h"

#include <elf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <zlib.h>

#include <cstring>
#include <string>

namespace pytstates {

namespace {

// What DwarfTypes reads: DIEs, their abbreviations, and names by every string form.
const char* const kTypeSections[] = {".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str", ".debug_str_offsets"};
constexpr uint64_t kMaxSection = 1ull << 30;  // one inflate call (zlib counts in 32 bits)

struct Piece {
    std::string name;
    const unsigned char* bytes;
    uint64_t size;      // as stored
    uint64_t plain;     // decompressed size
    uint64_t align;
    bool compressed;
    uint64_t offset = 0;  // in the image
};

// Inflates a zlib stream (RFC 1950) into exactly `size` bytes. The stream's Adler-32 is not
// checked (a tenth of the time): libdw bounds-checks what it reads.
bool inflateInto(const unsigned char* in, uint64_t inSize, unsigned char* out, uint64_t size) {
    if (inSize < 2 || (in[0] & 0x0f) != 8 || (in[0] >> 4) > 7 || ((in[0] << 8) | in[1]) % 31 != 0 || (in[1] & 0x20)) return false;
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK) return false;
    z.next_in = const_cast<unsigned char*>(in + 2);
    z.avail_in = static_cast<uInt>(inSize - 2);
    z.next_out = out;
    z.avail_out = static_cast<uInt>(size);
    int r = inflate(&z, Z_FINISH);
    bool whole = r == Z_STREAM_END && z.avail_out == 0;
    inflateEnd(&z);
    return whole;
}

uint64_t alignUp(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

}  // namespace

std::unique_ptr<TypeSections> TypeSections::open(const ElfFile& file) {
    if (file.findSection(".gnu_debugaltlink") || file.findSection(".debug_sup") || file.findSection(".debug_types")) return nullptr;
    std::vector<Piece> pieces;
    bool anyCompressed = false;
    for (const char* name : kTypeSections) {
        auto sec = file.findSection(name);
        if (!sec || sec->type == SHT_NOBITS) continue;
        const unsigned char* bytes = file.rawBytes(sec->offset, sec->size);
        if (!bytes || sec->size > kMaxSection) return nullptr;
        Elf_Scn* scn = nullptr;
        GElf_Shdr sh{};
        for (Elf_Scn* s = elf_nextscn(file.handle(), nullptr); s; s = elf_nextscn(file.handle(), s))
            if (gelf_getshdr(s, &sh) && sh.sh_offset == sec->offset && sh.sh_size == sec->size && sh.sh_type == sec->type) {
                scn = s;
                break;
            }
        if (!scn) return nullptr;
        Piece p{name, bytes, sec->size, sec->size, sh.sh_addralign ? sh.sh_addralign : 1, false};
        if (sh.sh_flags & SHF_COMPRESSED) {
            Elf64_Chdr ch;
            if (sec->size < sizeof ch) return nullptr;
            std::memcpy(&ch, bytes, sizeof ch);
            if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size > kMaxSection) return nullptr;
            p.bytes = bytes + sizeof ch;
            p.size = sec->size - sizeof ch;
            p.plain = ch.ch_size;
            p.align = ch.ch_addralign ? ch.ch_addralign : 1;
            p.compressed = anyCompressed = true;
        }
        pieces.push_back(p);
    }
    if (!anyCompressed || pieces.empty() || pieces[0].name != ".debug_info") return nullptr;

    // ELF header, the sections' bytes, their names, then the section headers.
    std::string names(1, '\0');
    uint64_t end = sizeof(Elf64_Ehdr);
    for (auto& p : pieces) {
        end = alignUp(end, std::min<uint64_t>(p.align, 4096));
        p.offset = end;
        end += p.plain;
    }
    uint64_t namesOffset = end;
    std::vector<uint32_t> nameAt;
    for (const auto& p : pieces) {
        nameAt.push_back(static_cast<uint32_t>(names.size()));
        names += p.name + '\0';
    }
    nameAt.push_back(static_cast<uint32_t>(names.size()));
    names += std::string(".shstrtab") + '\0';
    uint64_t shoff = alignUp(namesOffset + names.size(), 8);
    size_t shnum = pieces.size() + 2;

    std::unique_ptr<TypeSections> t(new TypeSections());
    t->size_ = shoff + shnum * sizeof(Elf64_Shdr);
    t->image_.reset(new unsigned char[t->size_]);
    unsigned char* image = t->image_.get();
    // The gaps alignment leaves, zeroed; the sections themselves are written whole below.
    uint64_t at = 0;
    for (const auto& p : pieces) {
        std::memset(image + at, 0, p.offset - at);
        at = p.offset + p.plain;
    }
    std::memset(image + at, 0, t->size_ - at);
    GElf_Ehdr original;
    if (!gelf_getehdr(file.handle(), &original)) return nullptr;
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, original.e_ident, EI_NIDENT);
    eh.e_type = original.e_type;
    eh.e_machine = original.e_machine;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    eh.e_shoff = shoff;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = static_cast<Elf64_Half>(shnum);
    eh.e_shstrndx = static_cast<Elf64_Half>(shnum - 1);
    std::memcpy(image, &eh, sizeof eh);
    std::vector<Elf64_Shdr> shdrs(shnum);
    for (size_t i = 0; i < pieces.size(); ++i) {
        const Piece& p = pieces[i];
        unsigned char* out = image + p.offset;
        if (p.compressed) {
            if (!inflateInto(p.bytes, p.size, out, p.plain)) return nullptr;
        } else {
            std::memcpy(out, p.bytes, p.size);
        }
        Elf64_Shdr& sh = shdrs[i + 1];
        sh.sh_name = nameAt[i];
        sh.sh_type = SHT_PROGBITS;
        sh.sh_offset = p.offset;
        sh.sh_size = p.plain;
        sh.sh_addralign = p.align;
        if (p.name == ".debug_str" || p.name == ".debug_line_str") {
            sh.sh_flags = SHF_MERGE | SHF_STRINGS;
            sh.sh_entsize = 1;
        }
    }
    std::memcpy(image + namesOffset, names.data(), names.size());
    Elf64_Shdr& strtab = shdrs[shnum - 1];
    strtab.sh_name = nameAt.back();
    strtab.sh_type = SHT_STRTAB;
    strtab.sh_offset = namesOffset;
    strtab.sh_size = names.size();
    strtab.sh_addralign = 1;
    std::memcpy(image + shoff, shdrs.data(), shnum * sizeof(Elf64_Shdr));

    t->elf_ = elf_memory(reinterpret_cast<char*>(image), t->size_);
    if (!t->elf_) return nullptr;
    t->dwarf_ = dwarf_begin_elf(t->elf_, DWARF_C_READ, nullptr);
    if (!t->dwarf_) return nullptr;
    return t;
}

TypeSections::~TypeSections() {
    if (dwarf_) dwarf_end(dwarf_);
    if (elf_) elf_end(elf_);
}

}  // namespace pytstates
