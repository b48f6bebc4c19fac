// SPDX-License-Identifier: Apache-2.0
#include "symbols/core/core_file.h"

#include "symbols/core/signal_names.h"
#include "symbols/regular_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pytstates {

namespace {

// struct elf_prpsinfo: pr_uid at 16, pr_gid at 20 (__kernel_uid_t: 4 bytes), pr_pid at 24, pr_ppid at 28,
// pr_fname[16] at 40, pr_psargs[80] at 56 (the same on x86_64 and aarch64).
constexpr size_t kPrpsinfoUid = 16, kPrpsinfoGid = 20, kPrpsinfoPpid = 28;
constexpr size_t kPrpsinfoPid = 24, kPrpsinfoFname = 40, kPrpsinfoArgs = 56, kPrpsinfoSize = 136;
// siginfo_t (NT_SIGINFO): si_signo, si_errno, si_code, then the union at 16: si_addr for faults,
// si_pid and si_uid for signals a process sent.
constexpr size_t kSiginfoSize = 128;
constexpr uint32_t kNtArmTls = 0x401;
constexpr uint64_t kMaxNotes = 256u << 20;  // a PT_NOTE larger than this is corrupt

size_t align4(size_t v) { return (v + 3) & ~size_t(3); }

template <typename T>
T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// The core itself, or what it decompresses to. The file is opened once: what is checked is
// what is read.
std::shared_ptr<ElfFile> openCore(const std::string& path, const ProgressLine& progress, uint64_t maxDecoded, std::string* error,
                                  uint64_t* ignoredFrom) {
    int fd = openRegularFile(path, error, true);
    if (fd < 0) return nullptr;
    unsigned char head[8] = {};
    ssize_t n = pread(fd, head, sizeof head, 0);
    CoreCompression kind = detectCompression(head, n > 0 ? static_cast<size_t>(n) : 0);
    if (kind == CoreCompression::None) return ElfFile::openFd(fd, path, error, ElfFile::Access::Read);
    DecompressedCore plain;
    try {
        plain = decompressToTemporaryFile(fd, kind, path, progress, maxDecoded);
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    *ignoredFrom = plain.ignoredFrom;
    return ElfFile::openFd(plain.fd, path, error, ElfFile::Access::Read);
}

}  // namespace

CoreFile::CoreFile(const std::string& path, const ProgressLine& progress, uint64_t maxDecoded)
    : path_(path), fileCache_([this](uint64_t offset, void* buf, size_t len) { return elf_ ? elf_->readAt(offset, buf, len) : 0; }) {
    std::string error;
    elf_ = openCore(path, progress, maxDecoded, &error, &ignoredFrom_);
    if (!elf_) throw std::runtime_error(error);
    if (elf_->type() != ET_CORE) throw std::runtime_error(path + ": an ELF file but not a core dump");
    arch_ = archForElfMachine(elf_->machine());
    if (!arch_)
        throw std::runtime_error(path + ": core of an unsupported architecture (ELF machine " + std::to_string(elf_->machine()) +
                                 "; x86_64 and aarch64 are supported)");

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
            if (avail > kMaxNotes) {
                truncated_ = true;
                avail = kMaxNotes;
            }
            std::unique_ptr<unsigned char[]> notes(new unsigned char[static_cast<size_t>(avail)]);  // not zero-filled: read over
            parseNotes(notes.get(), elf_->readAt(ph.p_offset, notes.get(), static_cast<size_t>(avail)));
        }
    }
    std::sort(segments_.begin(), segments_.end(), [](auto& a, auto& b) { return a.vaddr < b.vaddr; });
    if (threads_.empty()) {
        // gdb's gcore writes its notes last: a core cut anywhere has lost them all.
        if (truncated_)
            throw std::runtime_error(path + ": the core is truncated (" + std::to_string(elf_->fileSize()) +
                                     " bytes): its thread notes (NT_PRSTATUS: the threads and their registers) are in the part "
                                     "cut off, so nothing of the process can be read; copy the whole core");
        throw std::runtime_error(path + ": core has no thread (NT_PRSTATUS) notes; not a process core");
    }
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
        if (core && type == NT_PRSTATUS && descsz >= arch_->prstatusSize) {
            const Arch& a = *arch_;
            OsThread t;
            t.lwp = load<int32_t>(desc + a.prstatusPid);
            t.signal = load<int16_t>(desc + a.prstatusCursig);
            size_t words = (a.prstatusSize - a.prstatusRegs) / 8;
            std::vector<uint64_t> regs(words);
            std::memcpy(regs.data(), desc + a.prstatusRegs, std::min(words, a.prRegToDwarf.size()) * 8);
            t.registers = a.registersFromPrReg(regs.data(), std::min(words, a.prRegToDwarf.size()));
            t.syscall = a.syscallFromPrReg(regs.data(), std::min(words, a.prRegToDwarf.size()));
            t.pc = t.registers[a.pcRegister];
            t.sp = t.registers[a.spRegister];
            if (a.prRegThreadPointer >= 0) t.threadPointer = regs[a.prRegThreadPointer];
            if (!a.tlsVariantI) t.pthread = t.threadPointer;
            threads_.push_back(t);
            siginfo_.emplace_back();
        } else if (core && type == NT_SIGINFO && descsz >= kSiginfoSize && !threads_.empty()) {
            // The kernel writes one, after the dumping thread's NT_PRSTATUS; gdb one per thread.
            Siginfo si;
            si.signo = load<int32_t>(desc);
            si.code = load<int32_t>(desc + 8);
            si.address = load<uint64_t>(desc + 16);
            si.pid = load<int32_t>(desc + 16);
            si.uid = load<int32_t>(desc + 20);
            siginfo_.back() = si;
        } else if (type == kNtArmTls && descsz >= 8 && !threads_.empty() && arch_->machine == Machine::AArch64) {
            threads_.back().threadPointer = load<uint64_t>(desc);  // tpidr_el0, owner "LINUX"
        } else if (core && type == NT_PRPSINFO && descsz >= kPrpsinfoSize) {
            pid_ = load<int32_t>(desc + kPrpsinfoPid);
            ppid_ = load<int32_t>(desc + kPrpsinfoPpid);
            uid_ = load<uint32_t>(desc + kPrpsinfoUid);
            gid_ = load<uint32_t>(desc + kPrpsinfoGid);
            havePrpsinfo_ = true;
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

std::optional<CrashSignal> CoreFile::crashSignal() const {
    if (threads_.empty()) return std::nullopt;
    // The kernel dumps from the thread that took the fatal signal and writes it first; gdb's
    // gcore writes the thread it stopped with a signal first. A gcore of a running process has
    // pr_cursig 0 (and NT_SIGINFO of gdb's SIGSTOP): no crash. qemu 10's guest cores list the
    // threads in creation order, each with its own pr_cursig: the crashing one need not be first.
    size_t at = 0;
    if (!signalDumpsCore(threads_.front().signal) && !(siginfo_.front() && signalDumpsCore(siginfo_.front()->signo)))
        for (size_t i = 1; i < threads_.size(); ++i)
            if (signalDumpsCore(threads_[i].signal)) {
                at = i;
                break;
            }
    const auto& si = siginfo_[at];
    int sig = threads_[at].signal;
    if (!signalDumpsCore(sig) && si && signalDumpsCore(si->signo)) sig = si->signo;
    if (!signalDumpsCore(sig)) return std::nullopt;
    CrashSignal c;
    c.lwp = threads_[at].lwp;
    c.signal = sig;
    if (si && si->signo == sig) {
        c.haveSiginfo = true;
        c.code = si->code;
        if (si->code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP))
            c.faultAddress = si->address;
        if (si->code <= 0) {
            c.senderPid = si->pid;
            c.senderUid = si->uid;
        }
    }
    return c;
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

size_t CoreFile::read(uint64_t addr, void* buf, size_t len, bool keep) const {
    size_t done = 0;
    auto* out = static_cast<unsigned char*>(buf);
    while (done < len) {
        uint64_t a = addr + done;
        auto it = segments_.begin() + lastSegment_;
        // The segment that starts last at or below a (segments may overlap: the search decides).
        bool same = lastSegment_ < segments_.size() && a >= it->vaddr && (it + 1 == segments_.end() || a < (it + 1)->vaddr);
        if (!same) {
            it = std::upper_bound(segments_.begin(), segments_.end(), a, [](uint64_t v, const CoreSegment& s) { return v < s.vaddr; });
            if (it == segments_.begin()) break;
            --it;
            lastSegment_ = static_cast<size_t>(it - segments_.begin());
        }
        if (a >= it->vaddr + it->filesz) break;  // not in the core (or left out)
        size_t n = static_cast<size_t>(std::min<uint64_t>(len - done, it->vaddr + it->filesz - a));
        uint64_t offset = it->offset + (a - it->vaddr);
        size_t got = keep ? fileCache_.read(offset, out + done, n) : elf_->readAt(offset, out + done, n);  // short when truncated
        done += got;
        if (got < n) break;
    }
    return done;
}

std::optional<ProcessFacts> CoreFile::processFacts() const {
    if (!havePrpsinfo_) return std::nullopt;
    ProcessFacts f;
    f.command = fname_;
    f.arguments = psargs_;
    f.ppid = ppid_;
    f.uid = uid_;
    f.gid = gid_;
    return f;
}

}  // namespace pytstates
