// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/elf_file.h"
#include "symbols/regular_file.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pytstates {

namespace {

std::string toHex(const unsigned char* p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    s.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) {
        s.push_back(digits[p[i] >> 4]);
        s.push_back(digits[p[i] & 15]);
    }
    return s;
}

uint32_t gnuHash(const char* s) {
    uint32_t h = 5381;
    for (; *s; ++s) h = h * 33 + static_cast<unsigned char>(*s);
    return h;
}

size_t align4(size_t v) { return (v + 3) & ~size_t(3); }

}  // namespace

std::string buildIdFromNotes(const unsigned char* data, size_t size) {
    size_t pos = 0;
    while (pos + 12 <= size) {
        uint32_t namesz, descsz, type;
        std::memcpy(&namesz, data + pos, 4);
        std::memcpy(&descsz, data + pos + 4, 4);
        std::memcpy(&type, data + pos + 8, 4);
        size_t name = pos + 12;
        size_t desc = name + align4(namesz);
        if (namesz > size || descsz > size || desc + descsz > size) break;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(data + name, "GNU", 4) == 0 && descsz > 0)
            return toHex(data + desc, descsz);
        pos = desc + align4(descsz);
    }
    return {};
}

std::shared_ptr<ElfFile> ElfFile::open(const std::string& path, std::string* error, Access access) {
    // Only regular files (and block devices) are read: a path a core names may be a FIFO or a
    // device, refused before it is opened (regular_file.h).
    std::string why;
    int fd = openRegularFile(path, &why, true);
    if (fd < 0) {
        if (error) *error = why;
        return nullptr;
    }
    return openFd(fd, path, error, access);
}

std::shared_ptr<ElfFile> ElfFile::openFd(int fd, const std::string& path, std::string* error, Access access) {
    elf_version(EV_CURRENT);
    std::shared_ptr<ElfFile> f(new ElfFile());
    f->path_ = path;
    f->fd_ = fd;
    struct stat st;
    if (fstat(f->fd_, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
        if (error) *error = path + ": not a regular file (" + fileKindWords(st.st_mode) + ")";
        return nullptr;
    }
    f->elf_ = elf_begin(f->fd_, access == Access::Map ? ELF_C_READ_MMAP : ELF_C_READ, nullptr);
    if (!f->elf_ || elf_kind(f->elf_) != ELF_K_ELF) {
        if (error) *error = path + ": not an ELF file";
        return nullptr;
    }
    GElf_Ehdr ehdr;
    if (!gelf_getehdr(f->elf_, &ehdr) || ehdr.e_ident[EI_CLASS] != ELFCLASS64) {
        if (error) *error = path + ": not a 64-bit ELF file";
        return nullptr;
    }
    f->type_ = ehdr.e_type;
    f->machine_ = ehdr.e_machine;
    if (access == Access::Map) {
        size_t rawSize = 0;
        f->raw_ = reinterpret_cast<const unsigned char*>(elf_rawfile(f->elf_, &rawSize));
        f->rawSize_ = rawSize;
    } else {
        f->rawSize_ = S_ISBLK(st.st_mode) ? static_cast<uint64_t>(lseek(f->fd_, 0, SEEK_END)) : static_cast<uint64_t>(st.st_size);
    }

    size_t phnum = 0;
    elf_getphdrnum(f->elf_, &phnum);
    if (ehdr.e_type != ET_CORE && phnum && (ehdr.e_phoff > f->rawSize_ || phnum * uint64_t(ehdr.e_phentsize) > f->rawSize_ - ehdr.e_phoff))
        f->integrityProblem_ = "its program headers lie outside the file (truncated or corrupt)";
    uint64_t loadEnd = 0;
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(f->elf_, static_cast<int>(i), &ph)) continue;
        if (ph.p_type == PT_LOAD) loadEnd = std::max<uint64_t>(loadEnd, ph.p_offset + ph.p_filesz);
        if (ph.p_type == PT_LOAD || ph.p_type == PT_TLS)
            f->segments_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz,
                                    ph.p_type == PT_TLS ? 0x80000000u | ph.p_flags : ph.p_flags});
        if (ph.p_type == PT_NOTE && f->buildId_.empty()) {
            if (const unsigned char* notes = f->rawBytes(ph.p_offset, ph.p_filesz))
                f->buildId_ = buildIdFromNotes(notes, ph.p_filesz);
        }
    }
    if (ehdr.e_type != ET_CORE && f->integrityProblem_.empty()) {
        if (!phnum)
            f->integrityProblem_ = "it has no program headers";
        else if (loadEnd > f->rawSize_)
            f->integrityProblem_ = "it is truncated: its segments need " + std::to_string(loadEnd) + " bytes, the file has " +
                                   std::to_string(f->rawSize_);
        else if (loadEnd == 0)
            f->integrityProblem_ = "it has no loadable segment (corrupt program headers?)";
    }
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(f->elf_, &shstrndx) == 0) {
        for (Elf_Scn* scn = elf_nextscn(f->elf_, nullptr); scn; scn = elf_nextscn(f->elf_, scn)) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh)) continue;
            const char* name = elf_strptr(f->elf_, shstrndx, sh.sh_name);
            f->sections_.push_back({name ? name : "", sh.sh_addr, sh.sh_offset, sh.sh_size, sh.sh_type});
            if (f->buildId_.empty() && sh.sh_type == SHT_NOTE && sh.sh_type != SHT_NOBITS) {
                if (const unsigned char* notes = f->rawBytes(sh.sh_offset, sh.sh_size))
                    f->buildId_ = buildIdFromNotes(notes, sh.sh_size);
            }
        }
    }
    return f;
}

ElfFile::~ElfFile() {
    if (elf_) elf_end(elf_);
    if (fd_ >= 0) ::close(fd_);
}

size_t ElfFile::readAt(uint64_t offset, void* buf, size_t len) const {
    if (raw_ && fd_ < 0) {
        if (offset >= rawSize_) return 0;
        size_t n = static_cast<size_t>(std::min<uint64_t>(len, rawSize_ - offset));
        std::memcpy(buf, raw_ + offset, n);
        return n;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd_, static_cast<char*>(buf) + done, len - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    return done;
}

const unsigned char* ElfFile::rawBytes(uint64_t offset, uint64_t len) const {
    if (!raw_ || offset > rawSize_ || len > rawSize_ - offset) return nullptr;
    return raw_ + offset;
}

uint64_t ElfFile::firstLoadVaddr() const {
    for (const auto& s : segments_)
        if (!(s.flags & 0x80000000u)) return s.vaddr & ~uint64_t(0xfff);
    return 0;
}

std::optional<ElfSegment> ElfFile::tlsSegment() const {
    for (const auto& s : segments_)
        if (s.flags & 0x80000000u) return s;
    return std::nullopt;
}

std::optional<ElfSection> ElfFile::findSection(const std::string& name) const {
    for (const auto& s : sections_)
        if (s.name == name) return s;
    return std::nullopt;
}

std::optional<std::pair<std::string, uint32_t>> ElfFile::debugLink() const {
    auto sec = findSection(".gnu_debuglink");
    if (!sec) return std::nullopt;
    const unsigned char* p = rawBytes(sec->offset, sec->size);
    if (!p) return std::nullopt;
    size_t n = strnlen(reinterpret_cast<const char*>(p), sec->size);
    size_t crcPos = align4(n + 1);
    if (crcPos + 4 > sec->size) return std::nullopt;
    uint32_t crc;
    std::memcpy(&crc, p + crcPos, 4);
    return std::make_pair(std::string(reinterpret_cast<const char*>(p), n), crc);
}

size_t ElfFile::readVaddr(uint64_t vaddr, void* buf, size_t len) const {
    for (const auto& s : segments_) {
        if (s.flags & 0x80000000u) continue;
        if (vaddr < s.vaddr || vaddr >= s.vaddr + s.filesz) continue;
        uint64_t avail = s.vaddr + s.filesz - vaddr;
        size_t n = static_cast<size_t>(std::min<uint64_t>(len, avail));
        const unsigned char* p = rawBytes(s.offset + (vaddr - s.vaddr), n);
        if (!p) return 0;
        std::memcpy(buf, p, n);
        return n;
    }
    return 0;
}

std::optional<ElfSymbol> ElfFile::findSymbol(const std::string& name) const {
    auto it = symbolCache_.find(name);
    if (it != symbolCache_.end()) return it->second;
    std::optional<ElfSymbol> found = lookupGnuHash(name);
    if (!found) found = lookupLinear(SHT_DYNSYM, name);
    if (!found) found = lookupLinear(SHT_SYMTAB, name);
    symbolCache_[name] = found;
    return found;
}

// The GNU hash table of .dynsym: a few dozen reads instead of a walk over every symbol.
std::optional<ElfSymbol> ElfFile::lookupGnuHash(const std::string& name) const {
    Elf_Scn* hashScn = nullptr;
    GElf_Shdr hashHdr{};
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
        if (gelf_getshdr(scn, &hashHdr) && hashHdr.sh_type == SHT_GNU_HASH) {
            hashScn = scn;
            break;
        }
    }
    if (!hashScn) return std::nullopt;
    Elf_Scn* symScn = elf_getscn(elf_, hashHdr.sh_link);
    GElf_Shdr symHdr;
    if (!symScn || !gelf_getshdr(symScn, &symHdr)) return std::nullopt;
    Elf_Data* symData = elf_getdata(symScn, nullptr);
    const unsigned char* h = rawBytes(hashHdr.sh_offset, hashHdr.sh_size);
    if (!symData || !h || hashHdr.sh_size < 16) return std::nullopt;
    uint32_t nbuckets, symoffset, bloomSize, bloomShift;
    std::memcpy(&nbuckets, h, 4);
    std::memcpy(&symoffset, h + 4, 4);
    std::memcpy(&bloomSize, h + 8, 4);
    std::memcpy(&bloomShift, h + 12, 4);
    uint64_t bucketsPos = 16 + uint64_t(bloomSize) * 8;
    uint64_t chainPos = bucketsPos + uint64_t(nbuckets) * 4;
    if (nbuckets == 0 || chainPos > hashHdr.sh_size) return std::nullopt;
    uint32_t hash = gnuHash(name.c_str());
    uint32_t idx;
    std::memcpy(&idx, h + bucketsPos + uint64_t(hash % nbuckets) * 4, 4);
    if (idx < symoffset) return std::nullopt;
    size_t nsyms = symHdr.sh_entsize ? symHdr.sh_size / symHdr.sh_entsize : 0;
    for (; idx < nsyms; ++idx) {
        uint64_t pos = chainPos + uint64_t(idx - symoffset) * 4;
        if (pos + 4 > hashHdr.sh_size) break;
        uint32_t chainHash;
        std::memcpy(&chainHash, h + pos, 4);
        if ((chainHash | 1) == (hash | 1)) {
            GElf_Sym sym;
            if (gelf_getsym(symData, static_cast<int>(idx), &sym)) {
                const char* n = elf_strptr(elf_, symHdr.sh_link, sym.st_name);
                if (n && name == n && sym.st_shndx != SHN_UNDEF)
                    return ElfSymbol{sym.st_value, sym.st_size, static_cast<unsigned char>(GELF_ST_TYPE(sym.st_info)), true};
            }
        }
        if (chainHash & 1) break;
    }
    return std::nullopt;
}

std::optional<ElfSymbol> ElfFile::lookupLinear(uint32_t sectionType, const std::string& name) const {
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != sectionType || sh.sh_entsize == 0) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (!data) continue;
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
            const char* s = elf_strptr(elf_, sh.sh_link, sym.st_name);
            if (s && name == s) {
                releasePages(sh.sh_offset, sh.sh_size);
                return ElfSymbol{sym.st_value, sym.st_size, static_cast<unsigned char>(GELF_ST_TYPE(sym.st_info)), true};
            }
        }
        releasePages(sh.sh_offset, sh.sh_size);
        GElf_Shdr strings;
        if (gelf_getshdr(elf_getscn(elf_, sh.sh_link), &strings)) releasePages(strings.sh_offset, strings.sh_size);
    }
    return std::nullopt;
}

// The mapping is private and never written: its pages come back from the file when read again.
void ElfFile::releasePages(uint64_t offset, uint64_t len) const {
    if (!raw_ || offset >= rawSize_) return;
    auto start = reinterpret_cast<uintptr_t>(raw_ + offset);
    auto end = reinterpret_cast<uintptr_t>(raw_ + std::min<uint64_t>(rawSize_, offset + len));
    uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    start = (start + page - 1) & ~(page - 1);  // whole pages only: a neighbour may be in use
    end &= ~(page - 1);
    if (end > start) madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

}  // namespace pytstates
