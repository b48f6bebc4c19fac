// SPDX-License-Identifier: Apache-2.0
#include "symbols/modules/debug_session.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "symbols/elf/elf_file.h"
#include "symbols/elf/plain_debug_file.h"
#include "symbols/live/process_files.h"
#include "symbols/regular_file.h"
#include "symbols/text/proc_maps.h"

namespace pytstates {

namespace {

// Hands libdwfl the debug file module_files found (by build-id, .gnu_debuglink, --debug-dir).
int findDebuginfo(Dwfl_Module*, void** userdata, const char*, Dwarf_Addr, const char*, const char*, GElf_Word,
                  char** debuginfoFileName) {
    auto* info = static_cast<DebugSession::ModuleInfo*>(*userdata);
    if (!info || !info->useDwarf || !info->module->debugElf || info->module->debugElf == info->module->elf) return -1;
    const std::string& path = info->module->debugElf->path();
    int fd = info->decompress && *info->decompress ? openDecompressedCopy(path) : -1;
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0) {
        info->decompressed = true;
        info->device = st.st_dev;
        info->inode = st.st_ino;
    }
    if (fd < 0) fd = openRegularFile(path, nullptr);
    if (fd < 0) return -1;
    *debuginfoFileName = strdup(path.c_str());
    return fd;
}

}  // namespace

DebugSession::DebugSession(const Target& target, bool useDwarf) : useDwarf_(useDwarf) {
    callbacks_.find_elf = nullptr;  // every module is reported with its file
    callbacks_.find_debuginfo = findDebuginfo;
    callbacks_.section_address = dwfl_offline_section_address;
    dwfl_ = dwfl_begin(&callbacks_);
    if (!dwfl_) return;
    dwfl_report_begin(dwfl_);
    for (const auto& m : target.modules()) {
        if (!m.elf || m.resolvedPath.empty()) continue;
        // base = l_addr with add_p_vaddr: libdwfl places each segment at bias + p_vaddr. Opened
        // here, not by libdwfl (which opens whatever the path is, blocking on a FIFO): it takes
        // the descriptor when it takes the module.
        int fd = openRegularFile(m.resolvedPath, nullptr, true);
        if (fd < 0) continue;
        Dwfl_Module* mod = dwfl_report_elf(dwfl_, m.path.c_str(), m.resolvedPath.c_str(), fd, m.bias, true);
        if (!mod) {
            ::close(fd);
            continue;
        }
        infos_.push_back({&m, useDwarf, &decompressDebugFiles_});
        void** userdata = nullptr;
        dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
        if (userdata) *userdata = &infos_.back();
        byModule_[&m] = mod;
    }
    reportVdso(target);
    dwfl_report_end(dwfl_, nullptr, nullptr);
}

// The vDSO has no file: its image is in the process (and in its core, a mapping NT_FILE does not
// name). Copied into an anonymous file, it names frames (clock_gettime) and gives their CFI.
void DebugSession::reportVdso(const Target& target) {
    auto address = target.vdsoAddress();
    if (!address) return;
    Elf64_Ehdr eh;
    if (!target.readExact(*address, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 16)
        return;
    std::vector<Elf64_Phdr> ph(eh.e_phnum);
    if (!target.readExact(*address + eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr))) return;
    uint64_t size = eh.e_shoff + uint64_t(eh.e_shnum) * eh.e_shentsize, firstVaddr = 0;
    bool haveLoad = false;
    for (const auto& p : ph) {
        if (p.p_type != PT_LOAD) continue;
        size = std::max<uint64_t>(size, p.p_offset + p.p_filesz);
        if (!haveLoad && p.p_offset == 0) firstVaddr = p.p_vaddr;
        haveLoad = haveLoad || p.p_offset == 0;
    }
    constexpr uint64_t kMaxVdso = 1 << 20;
    if (!haveLoad || size > kMaxVdso) return;
    std::vector<char> image(size);
    if (!target.readExact(*address, image.data(), image.size())) return;
    int fd = memfd_create("vdso", MFD_CLOEXEC);
    if (fd < 0) return;
    if (::write(fd, image.data(), image.size()) != static_cast<ssize_t>(image.size())) {
        ::close(fd);
        return;
    }
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    vdso_.path = "[vdso]";
    vdso_.bias = *address - firstVaddr;
    vdso_.start = *address;
    vdso_.end = *address + size;
    vdso_.fileVia = "memory";
    std::string error;
    vdso_.elf = ElfFile::open(path, &error);
    vdso_.debugElf = vdso_.elf;
    // libdwfl keeps the descriptor it is given.
    Dwfl_Module* mod = dwfl_report_elf(dwfl_, "[vdso]", path.c_str(), fd, vdso_.bias, true);
    if (!mod) {
        ::close(fd);
        return;
    }
    infos_.push_back({&vdso_, useDwarf_, &decompressDebugFiles_});
    void** userdata = nullptr;
    dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (userdata) *userdata = &infos_.back();
    byModule_[&vdso_] = mod;
}

DebugSession::~DebugSession() {
    if (dwfl_) dwfl_end(dwfl_);
}

Dwarf* DebugSession::dwarf(const LoadedModule& module, Dwarf_Addr* bias) const {
    if (!useDwarf_) return nullptr;
    auto it = byModule_.find(&module);
    if (it == byModule_.end()) return nullptr;
    Dwarf_Addr b = 0;
    Dwarf* d = dwfl_module_getdwarf(it->second, &b);
    if (bias) *bias = b;
    return d;
}

void DebugSession::releaseDecompressedPages() const {
    std::set<std::pair<uint64_t, uint64_t>> files;
    for (const auto& info : infos_)
        if (info.decompressed) files.emplace(info.device, info.inode);
    if (files.empty()) return;
    // Where libelf mapped them, looked up again only when libdwfl opened another: a module's debug
    // file stays open, at one address, for the session's lifetime.
    if (files.size() != mappedFiles_) {
        mappedFiles_ = files.size();
        decompressedMaps_.clear();
        for (const auto& m : parseMaps(readProcText("/proc/self/maps")))
            if (files.count({makedev(m.major, m.minor), m.inode}) && m.end > m.start) decompressedMaps_.emplace_back(m.start, m.end - m.start);
    }
    // libelf maps each file whole (ELF_C_READ_MMAP_PRIVATE) and, for a file of this machine's byte
    // order (the only ones decompressed), never writes to the mapping: its pages are the file's,
    // and dropping them loses nothing.
    for (const auto& [start, size] : decompressedMaps_) ::madvise(reinterpret_cast<void*>(start), size, MADV_DONTNEED);
}

bool DebugSession::attachThreads(const Dwfl_Thread_Callbacks* callbacks, int pid) const {
    if (attached_) return true;
    if (!dwfl_ || !dwfl_attach_state(dwfl_, nullptr, pid > 0 ? pid : 1, callbacks, &threadArg_)) return false;
    attached_ = true;
    return true;
}

const LoadedModule* DebugSession::moduleOf(Dwfl_Module* mod) const {
    void** userdata = nullptr;
    if (!mod || !dwfl_module_info(mod, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr) || !userdata || !*userdata)
        return nullptr;
    return static_cast<ModuleInfo*>(*userdata)->module;
}

}  // namespace pytstates
