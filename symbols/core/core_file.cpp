#include "symbols/core/core_file.h"

#include <elf.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace pytstates {

namespace {

// struct elf_prstatus on x86_64 (linux/elfcore.h): pr_pid at 32, pr_reg (user_regs_struct) at 112.
constexpr size_t kPrstatusPid = 32;
constexpr size_t kPrstatusRegs = 112;
constexpr size_t kPrstatusSize = 336;
constexpr size_t kRegRip = 16, kRegRsp = 19, kRegFsBase = 21;
// struct elf_prpsinfo: pr_pid at 24, pr_fname[16] at 40, pr_psargs[80] at 56.
constexpr size_t kPrpsinfoPid = 24, kPrpsinfoFname = 40, kPrpsinfoArgs = 56, kPrpsinfoSize = 136;

size_t align4(size_t v) { return (v + 3) & ~size_t(3); }

template <typename T>
T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace

CoreFile::CoreFile(const std::string& path) : path_(path) {
    std::string error;
    elf_ = ElfFile::open(path, &error);
    if (!elf_) throw std::runtime_error(error);
    if (elf_->type() != ET_CORE) throw std::runtime_error(path + ": an ELF file but not a core dump");
    if (elf_->machine() != EM_X86_64) throw std::runtime_error(path + ": core of an unsupported architecture (only x86_64 is supported)");

    size_t phnum = 0;
    elf_getphdrnum(elf_->handle(), &phnum);
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf_->handle(), static_cast<int>(i), &ph)) continue;
        if (ph.p_type == PT_LOAD) {
            if (ph.p_filesz && ph.p_offset + ph.p_filesz > elf_->fileSize()) truncated_ = true;
            segments_.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags});
        } else if (ph.p_type == PT_NOTE) {
            uint64_t avail = ph.p_offset < elf_->fileSize() ? std::min<uint64_t>(ph.p_filesz, elf_->fileSize() - ph.p_offset) : 0;
            if (avail < ph.p_filesz) truncated_ = true;
            if (const unsigned char* notes = elf_->rawBytes(ph.p_offset, avail)) parseNotes(notes, avail);
        }
    }
    std::sort(segments_.begin(), segments_.end(), [](auto& a, auto& b) { return a.vaddr < b.vaddr; });
    if (threads_.empty()) throw std::runtime_error(path + ": core has no thread (NT_PRSTATUS) notes; truncated or not a process core");
}

void CoreFile::parseNotes(const unsigned char* data, size_t size) {
    size_t pos = 0;
    while (pos + 12 <= size) {
        uint32_t namesz = load<uint32_t>(data + pos), descsz = load<uint32_t>(data + pos + 4),
                 type = load<uint32_t>(data + pos + 8);
        size_t descPos = pos + 12 + align4(namesz);
        if (namesz > size || descsz > size || descPos + descsz > size) {
            truncated_ = true;
            return;
        }
        const char* name = reinterpret_cast<const char*>(data + pos + 12);
        const unsigned char* desc = data + descPos;
        bool core = namesz >= 4 && std::memcmp(name, "CORE", 4) == 0;
        if (core && type == NT_PRSTATUS && descsz >= kPrstatusSize) {
            OsThread t;
            t.lwp = load<int32_t>(desc + kPrstatusPid);
            t.pc = load<uint64_t>(desc + kPrstatusRegs + 8 * kRegRip);
            t.sp = load<uint64_t>(desc + kPrstatusRegs + 8 * kRegRsp);
            t.threadPointer = load<uint64_t>(desc + kPrstatusRegs + 8 * kRegFsBase);
            threads_.push_back(t);
        } else if (core && type == NT_PRPSINFO && descsz >= kPrpsinfoSize) {
            pid_ = load<int32_t>(desc + kPrpsinfoPid);
            fname_.assign(reinterpret_cast<const char*>(desc + kPrpsinfoFname), strnlen(reinterpret_cast<const char*>(desc + kPrpsinfoFname), 16));
            psargs_.assign(reinterpret_cast<const char*>(desc + kPrpsinfoArgs), strnlen(reinterpret_cast<const char*>(desc + kPrpsinfoArgs), 80));
        } else if (core && type == NT_AUXV) {
            for (size_t i = 0; i + 16 <= descsz; i += 16) {
                uint64_t k = load<uint64_t>(desc + i), v = load<uint64_t>(desc + i + 8);
                if (k == AT_NULL) break;
                auxv_[k] = v;
            }
        } else if (core && type == NT_FILE && descsz >= 16) {
            uint64_t count = load<uint64_t>(desc), pageSize = load<uint64_t>(desc + 8);
            size_t entries = 16, strings = 16 + count * 24;
            if (count > descsz / 24 || strings > descsz) {
                truncated_ = true;
            } else {
                const char* s = reinterpret_cast<const char*>(desc + strings);
                const char* endOfNote = reinterpret_cast<const char*>(desc + descsz);
                for (uint64_t i = 0; i < count && s < endOfNote; ++i) {
                    const unsigned char* e = desc + entries + i * 24;
                    size_t len = strnlen(s, endOfNote - s);
                    mappedFiles_.push_back({load<uint64_t>(e), load<uint64_t>(e + 8), load<uint64_t>(e + 16) * pageSize, std::string(s, len)});
                    s += len + 1;
                }
            }
        }
        pos = descPos + align4(descsz);
    }
}

uint64_t CoreFile::auxValue(uint64_t type) const {
    auto it = auxv_.find(type);
    return it == auxv_.end() ? 0 : it->second;
}

uint64_t CoreFile::leftOutFrom(uint64_t addr) const {
    auto next = std::upper_bound(segments_.begin(), segments_.end(), addr, [](uint64_t v, const CoreSegment& s) { return v < s.vaddr; });
    uint64_t untilNext = next == segments_.end() ? UINT64_MAX - addr : next->vaddr - addr;
    if (next == segments_.begin()) return untilNext;  // below every segment: not dumped at all
    auto it = std::prev(next);
    if (addr < it->vaddr + it->filesz) return 0;  // the core should hold it: truncated away
    if (addr < it->vaddr + it->memsz) return it->vaddr + it->memsz - addr;  // p_filesz < p_memsz
    return untilNext;  // between segments: gcore leaves clean file mappings out entirely
}

size_t CoreFile::read(uint64_t addr, void* buf, size_t len) const {
    size_t done = 0;
    auto* out = static_cast<unsigned char*>(buf);
    while (done < len) {
        uint64_t a = addr + done;
        auto it = std::upper_bound(segments_.begin(), segments_.end(), a, [](uint64_t v, const CoreSegment& s) { return v < s.vaddr; });
        if (it == segments_.begin()) break;
        --it;
        if (a >= it->vaddr + it->filesz) break;  // not in the core (or left out)
        uint64_t n = std::min<uint64_t>(len - done, it->vaddr + it->filesz - a);
        const unsigned char* p = elf_->rawBytes(it->offset + (a - it->vaddr), n);
        if (!p) {  // truncated core: take what is there
            uint64_t fileEnd = elf_->fileSize();
            uint64_t off = it->offset + (a - it->vaddr);
            if (off >= fileEnd) break;
            n = fileEnd - off;
            p = elf_->rawBytes(off, n);
            if (!p) break;
            std::memcpy(out + done, p, n);
            done += n;
            break;
        }
        std::memcpy(out + done, p, n);
        done += n;
    }
    return done;
}

}  // namespace pytstates
