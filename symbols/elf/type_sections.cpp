// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/type_sections.h"

#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "symbols/elf/zlib_stream.h"

namespace pytstates {

namespace {

// What DwarfTypes reads: DIEs, their abbreviations, and names by every string form.
const char* const kTypeSections[] = {".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str", ".debug_str_offsets"};
constexpr uint64_t kMaxSection = 1ull << 30;  // larger than any type section this reads

struct Piece {
    std::string name;
    const unsigned char* bytes;
    uint64_t size;      // as stored
    uint64_t plain;     // decompressed size
    uint64_t align;
    bool compressed;
    uint64_t fileOffset = 0;  // of the bytes as stored (past the compression header)
    uint64_t offset = 0;      // in the image
};

// A zlib stream held in memory (a section of the mapped file), inflated into exactly `size` bytes.
bool inflateInto(const unsigned char* in, uint64_t inSize, unsigned char* out, uint64_t size) {
    ZlibStream z;
    auto read = [in](uint64_t offset, void* buf, size_t len) {
        std::memcpy(buf, in + offset, len);
        return true;
    };
    if (!z.start(read, 0, inSize, size)) return false;
    while (z.inflateSome(out + z.done(), static_cast<size_t>(size - z.done())) > 0) {
    }
    return z.complete();
}

uint64_t alignUp(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

bool readUleb(const unsigned char*& p, const unsigned char* end, uint64_t* value) {
    *value = 0;
    for (unsigned shift = 0; p < end; shift += 7) {
        unsigned char byte = *p++;
        if (shift < 64) *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return true;
    }
    return false;
}

// Code: what a type lookup never reads (it checks a DIE's tag before anything else).
bool isCodeTag(uint64_t tag) {
    switch (tag) {
        case DW_TAG_subprogram: case DW_TAG_inlined_subroutine: case DW_TAG_formal_parameter: case DW_TAG_variable:
        case DW_TAG_lexical_block: case DW_TAG_label: case DW_TAG_call_site: case DW_TAG_call_site_parameter:
        case DW_TAG_GNU_call_site: case DW_TAG_GNU_call_site_parameter:
            return true;
        default:
            return false;
    }
}

// Whether any abbreviation but code's has a form that can refer into another unit (or a form
// given in the DIE itself): then a type's DIEs may lead anywhere in .debug_info.
bool typesMayReferAcrossUnits(const unsigned char* p, uint64_t size) {
    const unsigned char* end = p + size;
    while (p < end) {
        uint64_t code, tag, attribute, form;
        if (!readUleb(p, end, &code)) return true;
        if (code == 0) continue;  // one unit's table ends
        if (!readUleb(p, end, &tag) || p >= end) return true;
        ++p;  // DW_CHILDREN_yes/no
        for (;;) {
            if (!readUleb(p, end, &attribute) || !readUleb(p, end, &form)) return true;
            if (attribute == 0 && form == 0) break;
            if (form == DW_FORM_implicit_const && !readUleb(p, end, &code)) return true;  // its value, skipped
            if (form == DW_FORM_indirect) return true;
            bool acrossUnits = form == DW_FORM_ref_addr || form == DW_FORM_ref_sig8 || form == DW_FORM_GNU_ref_alt ||
                               form == DW_FORM_ref_sup4 || form == DW_FORM_ref_sup8;
            if (acrossUnits && !isCodeTag(tag)) return true;
        }
    }
    return false;
}

constexpr uint64_t kInflateStep = uint64_t{64} << 10;  // decompressed bytes per step

}  // namespace

// .debug_info's zlib stream, decompressed into the image on demand from the file, which is read
// in steps (never mapped whole).
struct TypeSections::LazyInfo {
    ZlibStream stream;
    unsigned char* out = nullptr;
    uint64_t size = 0;  // decompressed size

    bool start(const ElfFile& f, uint64_t offset, uint64_t compressed, unsigned char* image, uint64_t plain) {
        out = image;
        size = plain;
        return stream.start([&f](uint64_t at, void* buf, size_t len) { return f.readAt(at, buf, len) == len; }, offset, compressed, plain);
    }
    uint64_t done() const { return stream.done(); }
    // Decompresses through `end` (or the section's end), in whole steps.
    bool inflateThrough(uint64_t end) {
        end = std::min(end, size);
        uint64_t target = std::min(size, alignUp(end, kInflateStep));
        while (stream.done() < target)
            if (stream.inflateSome(out + stream.done(), static_cast<size_t>(target - stream.done())) == 0) break;
        return stream.done() >= end;
    }
};

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
            p.fileOffset = sec->offset + sizeof ch;
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
    // Address space: a page costs memory once something is written to it.
    void* mapped = mmap(nullptr, t->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) return nullptr;
    t->image_ = static_cast<unsigned char*>(mapped);
    unsigned char* image = t->image_;
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
    // .debug_info last, once the abbreviations are there to be read.
    for (size_t i = pieces.size(); i-- > 0;) {
        const Piece& p = pieces[i];
        unsigned char* out = image + p.offset;
        if (i == 0 && p.compressed) {
            t->info_ = std::make_unique<LazyInfo>();
            if (!t->info_->start(file, p.fileOffset, p.size, out, p.plain)) return nullptr;
            const Piece* abbrev = pieces.size() > 1 && pieces[1].name == ".debug_abbrev" ? &pieces[1] : nullptr;
            bool lazy = original.e_ident[EI_DATA] == ELFDATA2LSB && abbrev && !typesMayReferAcrossUnits(image + abbrev->offset, abbrev->plain);
            if (!t->info_->inflateThrough(lazy ? 0 : p.plain) || !t->ensureUnit(0)) return nullptr;
        } else if (p.compressed) {
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
    std::copy(names.begin(), names.end(), image + namesOffset);  // NUL-separated names
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
    info_.reset();
    if (image_) munmap(image_, size_);
}

bool TypeSections::ensureUnit(uint64_t offset) {
    if (!info_ || offset >= info_->size) return true;  // all there, or past the end: libdw tells
    LazyInfo& info = *info_;
    // The unit's initial length: 32-bit, or 0xffffffff and 64-bit (DWARF64).
    if (!info.inflateThrough(offset + 4)) return false;
    uint32_t length32;
    std::memcpy(&length32, info.out + offset, 4);
    uint64_t end = offset + 4 + length32;
    if (length32 == 0xffffffff) {
        if (!info.inflateThrough(offset + 12)) return false;
        uint64_t length64;
        std::memcpy(&length64, info.out + offset + 4, 8);
        end = length64 > info.size ? info.size : offset + 12 + length64;
    }
    if (end > info.size || end < offset) end = info.size;
    return info.inflateThrough(end);
}

uint64_t TypeSections::infoDecompressed() const { return info_ ? info_->done() : 0; }
uint64_t TypeSections::infoSize() const { return info_ ? info_->size : 0; }

}  // namespace pytstates
