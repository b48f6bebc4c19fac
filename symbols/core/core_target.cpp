// SPDX-License-Identifier: Apache-2.0
#include "symbols/core/core_target.h"

#include <elf.h>

#include <gelf.h>

#include <algorithm>
#include <map>
#include <cstring>
#include <stdexcept>

#include "symbols/elf/elf_file.h"
#include "symbols/glibc/thread_list.h"

namespace pytstates {

namespace {

// Memory exactly as the core holds it, for the build-id check (no fallback to files).
class CoreOnlyMemory : public Memory {
public:
    explicit CoreOnlyMemory(const CoreFile& core) : core_(core) {}
    size_t read(uint64_t addr, void* buf, size_t len) const override { return core_.read(addr, buf, len); }

private:
    const CoreFile& core_;
};

}  // namespace

CoreTarget::CoreTarget(const CoreOptions& options)
    : core_(options.corePath, options.progress, options.maxDecoded), threads_(core_.threads()), search_(options.search) {
    if (core_.truncated()) warnings_.push_back("the core is truncated: some memory is missing");
    if (core_.ignoredFrom())
        warnings_.push_back("the compressed stream goes on past the core's end (byte " + std::to_string(core_.ignoredFrom()) +
                            ", where its own headers end it): the rest was not decoded");
    buildModules(options);
    completeThreadPointers();
}

const MappedFile* CoreTarget::mappingAt(uint64_t addr) const {
    for (const auto& m : mappings_)
        if (addr >= m.start && addr < m.end) return &m;
    return nullptr;
}

std::shared_ptr<ElfFile> CoreTarget::fileForMapping(const MappedFile& m) const {
    // The module's own file, also when it is not where the mapping says (--exe, a file found by
    // build-id): a mapping inside a module's extent is that module's.
    for (const auto& mod : modules_)
        if (m.start >= mod.start && m.start < mod.end && (mod.path == m.path || mod.elf)) return mod.elf;  // null when mismatched
    auto it = mappedFileCache_.find(m.path);
    if (it != mappedFileCache_.end()) return it->second;
    std::string error;
    auto file = ElfFile::open(resolveInSysroot(search_, m.path), &error);
    mappedFileCache_[m.path] = file;
    return file;
}

std::optional<uint64_t> CoreTarget::vdsoAddress() const {
    uint64_t v = core_.auxValue(AT_SYSINFO_EHDR);
    if (!v) return std::nullopt;
    return v;
}

std::vector<std::string> CoreTarget::mappedFilePaths() const {
    std::vector<std::string> paths;
    if (synthesizedMappings_) return paths;  // made from the link map: nothing it does not list
    for (const auto& m : mappings_)
        if (!m.path.empty() && std::find(paths.begin(), paths.end(), m.path) == paths.end()) paths.push_back(m.path);
    return paths;
}

size_t CoreTarget::read(uint64_t addr, void* buf, size_t len, bool keep) const {
    countRead(len);
    auto* out = static_cast<unsigned char*>(buf);
    size_t done = 0;
    while (done < len) {
        size_t got = core_.read(addr + done, out + done, len - done, keep);
        done += got;
        if (done == len) break;
        // Left out by the dumper (a clean file page): served from the mapped file. Bytes a
        // truncated core lost are not: the file holds what was there before the process ran.
        uint64_t a = addr + done;
        uint64_t leftOut = core_.leftOutFrom(a);
        const MappedFile* m = leftOut ? mappingAt(a) : nullptr;
        if (!m) break;
        auto file = fileForMapping(*m);
        if (!file) break;
        uint64_t n = std::min<uint64_t>({len - done, m->end - a, leftOut});
        uint64_t off = m->fileOffset + (a - m->start);
        if (off >= file->fileSize()) break;
        n = std::min<uint64_t>(n, file->fileSize() - off);
        const unsigned char* p = file->rawBytes(off, n);
        if (!p || n == 0) break;
        std::memcpy(out + done, p, n);
        done += n;
    }
    return done;
}

void CoreTarget::buildModules(const CoreOptions& options) {
    CoreOnlyMemory coreOnly(core_);
    ModuleDiscoveryInput in;
    in.memory = this;
    in.pristine = &coreOnly;
    in.atPhdr = core_.auxValue(AT_PHDR);
    in.atPhnum = core_.auxValue(AT_PHNUM);
    in.atEntry = core_.auxValue(AT_ENTRY);
    mappings_ = core_.mappedFiles();
    if (mappings_.empty()) {
        // No NT_FILE (qemu's cores, kernels told not to write it): the executable and the dynamic
        // linker are placed from the auxiliary vector, then every module the link map lists.
        mappings_ = mappingsFromAuxv(options);
        synthesizedMappings_ = true;
        warnings_.push_back("the core has no NT_FILE note: modules come from the link map, and memory the core left out "
                            "is read from their files" + std::string(search_.sysroot.empty() ? " (--sysroot DIR: where they are)" : ""));
    }
    in.mappings = mappings_;
    in.executableOverride = options.executable;
    in.search = search_;
    ModuleDiscovery found = discoverModules(in);
    executable_ = found.executable;
    modules_ = std::move(found.modules);
    if (synthesizedMappings_) {
        // Such a core left out every read-only page, the ELF notes with the build-ids among them:
        // one line for all the files that could not be checked, not one per module.
        size_t unverified = 0;
        std::vector<std::string> kept;
        for (const auto& w : found.warnings)
            if (w.find(": cannot be verified: the target's memory holds no build-id") != std::string::npos) ++unverified;
            else kept.push_back(w);
        found.warnings = std::move(kept);
        if (unverified)
            found.warnings.push_back("the core holds no build-id of " + std::to_string(unverified) +
                                     " modules (their read-only pages were left out): their files are used unverified");
    }
    warnings_.insert(warnings_.end(), found.warnings.begin(), found.warnings.end());
    if (synthesizedMappings_) addModuleMappings();
}

namespace {

// The PT_LOAD segments of `file` placed at `bias`, as the kernel maps them (page-granular).
void addSegments(std::vector<MappedFile>& out, const ElfFile& file, uint64_t bias, const std::string& path) {
    constexpr uint64_t kPage = 4096;
    for (const auto& seg : file.segments()) {
        if ((seg.flags & 0x80000000u) || seg.filesz == 0) continue;  // PT_TLS; bss only
        uint64_t start = (bias + seg.vaddr) & ~(kPage - 1);
        uint64_t end = bias + seg.vaddr + seg.filesz;
        out.push_back({start, end, seg.offset & ~(kPage - 1), path, false});
    }
}

std::string readCoreString(const Memory& memory, uint64_t addr) {
    return addr ? memory.readCString(addr, 4096).value_or("") : "";
}

}  // namespace

std::vector<MappedFile> CoreTarget::mappingsFromAuxv(const CoreOptions& options) {
    std::vector<MappedFile> out;
    // The executable: --exe, else AT_EXECFN (the path it was started by, on the dumped stack),
    // else the first word of the command line.
    std::string exe = options.executable;
    if (exe.empty()) exe = readCoreString(CoreOnlyMemory(core_), core_.auxValue(AT_EXECFN));
    if (exe.empty()) exe = core_.commandLine().substr(0, core_.commandLine().find(' '));
    uint64_t phdr = core_.auxValue(AT_PHDR);
    std::string error;
    auto file = exe.empty() || exe[0] != '/' ? nullptr : ElfFile::open(resolveInSysroot(search_, exe), &error);
    if (!file || !phdr) return out;
    // AT_PHDR is where the program headers are: the bias is that minus where the file puts them
    // (PT_PHDR, else the first PT_LOAD's address plus e_phoff).
    GElf_Ehdr eh;
    if (!gelf_getehdr(file->handle(), &eh)) return out;
    uint64_t phdrVaddr = file->firstLoadVaddr() + eh.e_phoff;
    std::string interp;
    size_t phnum = 0;
    elf_getphdrnum(file->handle(), &phnum);
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (!gelf_getphdr(file->handle(), static_cast<int>(i), &ph)) continue;
        if (ph.p_type == PT_PHDR) phdrVaddr = ph.p_vaddr;
        if (ph.p_type == PT_INTERP && ph.p_filesz > 1 && ph.p_filesz < 4096)
            if (const unsigned char* p = file->rawBytes(ph.p_offset, ph.p_filesz)) interp.assign(reinterpret_cast<const char*>(p), ph.p_filesz - 1);
    }
    addSegments(out, *file, phdr - phdrVaddr, exe);
    // The dynamic linker: AT_BASE, its path from the program's PT_INTERP.
    uint64_t base = core_.auxValue(AT_BASE);
    if (!interp.empty() && base)
        if (auto ld = ElfFile::open(resolveInSysroot(search_, interp), &error)) addSegments(out, *ld, base - ld->firstLoadVaddr(), interp);
    return out;
}

void CoreTarget::addModuleMappings() {
    std::vector<MappedFile> all;
    for (const auto& m : modules_)
        if (m.elf) addSegments(all, *m.elf, m.bias, m.path);
    if (!all.empty()) mappings_ = std::move(all);
}

// The thread pointer and struct pthread of every thread: pr_reg has the thread pointer on x86_64
// (fs_base, which is the struct pthread); aarch64 keeps tpidr_el0 in NT_ARM_TLS, with struct
// pthread below it; a core without it (qemu's) gets both from glibc's own thread lists.
void CoreTarget::completeThreadPointers() {
    const Arch& a = core_.arch();
    uint64_t sizeofPthread = glibcSizeofPthread(*this);
    bool missing = false;
    for (auto& t : threads_) {
        if (t.threadPointer && !t.pthread && (!a.tlsVariantI || sizeofPthread)) t.pthread = a.pthreadFromThreadPointer(t.threadPointer, sizeofPthread);
        missing = missing || !t.pthread;
    }
    if (!missing) return;
    std::map<int, OsThread> fromGlibc;
    for (const auto& t : threadsFromGlibcLists(*this)) fromGlibc[t.lwp] = t;
    for (auto& t : threads_) {
        auto it = fromGlibc.find(t.lwp);
        if (t.pthread || it == fromGlibc.end()) continue;
        t.pthread = it->second.pthread;
        t.threadPointer = it->second.threadPointer;
    }
}

}  // namespace pytstates
