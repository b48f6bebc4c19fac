// SPDX-License-Identifier: Apache-2.0
#include "symbols/debugger/debugger_target.h"

#include <elf.h>
#include <gelf.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>

#include "symbols/core/signal_names.h"
#include "symbols/elf/elf_file.h"
#include "symbols/glibc/thread_list.h"
#include "symbols/live/monotonic_clock.h"
#include "symbols/live/process_files.h"


namespace pytstates {

namespace {

// Memory as the debugger gives it, without the files' read-only pages: for the build-id check.
class DebuggerOnlyMemory : public Memory {
public:
    explicit DebuggerOnlyMemory(const std::function<size_t(uint64_t, void*, size_t)>& read) : read_(read) {}
    size_t read(uint64_t addr, void* buf, size_t len) const override { return read_ ? read_(addr, buf, len) : 0; }

private:
    const std::function<size_t(uint64_t, void*, size_t)>& read_;
};

}  // namespace

DebuggerTarget::DebuggerTarget(DebuggerInput input)
    : input_(std::move(input)), cache_([this](uint64_t addr, void* buf, size_t len) {
          size_t n = input_.read ? input_.read(addr, buf, len) : 0;
          return fillFromFiles(addr, static_cast<unsigned char*>(buf), len, n);
      }) {
    addExecutableSegments();
    DebuggerOnlyMemory pristine(input_.read);
    ModuleDiscoveryInput in;
    in.memory = this;
    in.pristine = &pristine;
    in.atPhdr = input_.atPhdr;
    in.atPhnum = input_.atPhnum;
    in.atEntry = input_.atEntry;
    in.mappings = input_.mappings;
    in.executable = input_.executable;
    in.search = input_.search;
    // A live process on this machine (search.processDir set by the front end): its files as
    // /proc names them, read through /proc/PID/map_files like the CLI's.
    if (!input_.search.processDir.empty() && input_.live && input_.pid > 0) {
        ProcessFiles files = readProcessFiles(input_.pid);
        if (!files.mappings.empty()) {
            root_ = files.root;
            namespacePids_ = files.namespacePids;
            if (in.mappings.empty()) in.mappings = std::move(files.mappings);
            if (!files.executable.empty()) in.executable = files.executable;
            procVisible_ = true;
        } else {
            in.search.processDir.clear();  // not a process we can see (another machine's pid)
        }
    }
    ModuleDiscovery found = discoverModules(in);
    executable_ = found.executable;
    modules_ = std::move(found.modules);
    warnings_ = std::move(found.warnings);
    for (const auto& m : modules_)
        if (m.path == executable_ && m.elf)
            if (const Arch* a = archForElfMachine(m.elf->machine())) arch_ = a;
    if (!fileSegments_.empty()) {  // now every module's: pages read before are read again
        fileSegments_.clear();
        for (const auto& m : modules_)
            if (m.elf) addFileSegments(m.elf, m.bias);
        cache_.clear();
    }
    fitThreadsToArch();
    fillMissingThreadPointers();
}

// qemu's cores leave out every read-only file page, and gdb reads what no section of the files it
// has open covers there (the ELF header, the program headers at AT_PHDR) as zeros, a whole page
// at a time even where a section begins in it: without them there is no link map, no name of the
// dynamic linker (the executable's .interp). Such pages of a module's read-only segments are its
// file's bytes: taken from the file where the debugger gives none or zeros. First the executable's
// (from AT_PHDR), for the link map; then every module's.
void DebuggerTarget::addExecutableSegments() {
    if (!input_.atPhdr || input_.executable.empty() || !input_.read) return;
    std::string error;
    auto file = ElfFile::open(resolveInSysroot(input_.search, input_.executable), &error);
    GElf_Ehdr eh;
    if (!file || !gelf_getehdr(file->handle(), &eh)) return;
    uint64_t phdrVaddr = file->firstLoadVaddr() + eh.e_phoff;
    size_t phnum = 0;
    elf_getphdrnum(file->handle(), &phnum);
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(file->handle(), static_cast<int>(i), &ph) && ph.p_type == PT_PHDR) phdrVaddr = ph.p_vaddr;
    }
    addFileSegments(file, input_.atPhdr - phdrVaddr);
}

void DebuggerTarget::addFileSegments(const std::shared_ptr<ElfFile>& file, uint64_t bias) {
    for (const auto& seg : file->segments())
        if (!(seg.flags & 0x80000000u) && !(seg.flags & PF_W) && seg.filesz)  // not PT_TLS; read-only
            fileSegments_.push_back({bias + seg.vaddr, bias + seg.vaddr + seg.filesz, seg.offset, file});
}

size_t DebuggerTarget::fillFromFiles(uint64_t addr, unsigned char* buf, size_t len, size_t got) const {
    size_t valid = got;
    for (const auto& seg : fileSegments_) {
        uint64_t from = std::max(addr, seg.start), to = std::min(addr + len, seg.end);
        if (from >= to) continue;
        unsigned char* at = buf + (from - addr);
        size_t inGot = got > from - addr ? std::min<size_t>(got - (from - addr), to - from) : 0;
        bool none = inGot < to - from || std::all_of(at, at + inGot, [](unsigned char b) { return b == 0; });
        if (!none) continue;
        const unsigned char* bytes = seg.file->rawBytes(seg.offset + (from - seg.start), to - from);
        if (!bytes) continue;
        std::memcpy(at, bytes, to - from);
        if (from - addr <= valid) valid = std::max<size_t>(valid, to - addr);
    }
    return valid;
}

// The front end reads registers by the names of the machine it takes the target for; the
// executable's machine decides: registers of another count are dropped (the thread is walked from
// none), pc and sp are its DWARF numbers, a system call not handed over is the one in the
// registers (aarch64's x8, as a core's pr_reg gives it), and struct pthread follows the thread
// pointer by its TLS variant.
void DebuggerTarget::fitThreadsToArch() {
    const Arch& a = *arch_;
    std::optional<uint64_t> sizeofPthread;
    for (auto& t : input_.threads) {
        if (!t.registers.empty() && t.registers.size() != a.dwarfRegisters) {
            t.registers.clear();
            t.pc = t.sp = 0;
        }
        if (!t.registers.empty()) {
            t.pc = t.registers[a.pcRegister];
            t.sp = t.registers[a.spRegister];
            if (t.syscall < 0) t.syscall = a.syscallFromRegisters(t.registers);
        }
        if (!t.threadPointer || t.pthread) continue;
        if (!a.tlsVariantI) {
            t.pthread = t.threadPointer;
            continue;
        }
        if (!sizeofPthread) sizeofPthread = glibcSizeofPthread(*this);
        if (*sizeofPthread) t.pthread = a.pthreadFromThreadPointer(t.threadPointer, *sizeofPthread);
        else t.threadPointer = 0;  // its struct pthread cannot be told from it: glibc's lists say
    }
}

// A debugger that cannot give a thread's fs_base (lldb 14 on cores) still lets us read memory:
// glibc's own thread lists give every thread's struct pthread with its tid.
void DebuggerTarget::fillMissingThreadPointers() {
    bool missing = false;
    for (const auto& t : input_.threads) missing = missing || !t.threadPointer;
    if (!missing) return;
    std::map<int, OsThread> fromGlibc;
    for (const auto& t : threadsFromGlibcLists(*this)) fromGlibc[t.lwp] = t;
    size_t unknown = 0;
    for (auto& t : input_.threads) {
        if (t.threadPointer) continue;
        auto it = fromGlibc.find(t.lwp);
        if (it != fromGlibc.end()) {
            t.threadPointer = it->second.threadPointer;
            t.pthread = it->second.pthread;
        } else {
            ++unknown;
        }
    }
    if (unknown) warnings_.push_back(std::to_string(unknown) + " thread(s) without a thread pointer: their TLS is not read");
}

std::optional<CrashSignal> DebuggerTarget::crashSignal() const {
    if (!input_.crash || !signalDumpsCore(input_.crash->signal)) return std::nullopt;
    // A live process the debugger holds stopped on a fatal signal is a crash as a core is; its
    // SIGTRAP is a breakpoint.
    if (input_.live && input_.crash->signal == SIGTRAP) return std::nullopt;
    return input_.crash;
}

size_t DebuggerTarget::read(uint64_t addr, void* buf, size_t len) const {
    countRead(len);
    return cache_.read(addr, buf, len);
}

std::optional<double> DebuggerTarget::monotonicNow() const {
    if (!input_.live || input_.pid <= 0 || !(procVisible_ || input_.localProcess)) return std::nullopt;
    return processMonotonicNow(input_.pid);
}

std::optional<std::string> DebuggerTarget::threadComm(int lwp) const {
    if (!procVisible_ && !(input_.live && input_.localProcess && input_.pid > 0)) return std::nullopt;
    return readThreadComm(input_.pid, lwp);
}

}  // namespace pytstates
