// SPDX-License-Identifier: Apache-2.0
#include "symbols/modules/module_discovery.h"

#include <elf.h>
#include <gelf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <regex>
#include <set>
#include <stdexcept>

#include "symbols/modules/link_map.h"

namespace pytstates {

namespace {

uint64_t loadEnd(const ElfFile& elf) {
    uint64_t end = 0;
    for (const auto& s : elf.segments())
        if (!(s.flags & 0x80000000u)) end = std::max(end, s.vaddr + s.memsz);
    return end;
}

const MappedFile* mappingAt(const std::vector<MappedFile>& mappings, uint64_t addr) {
    for (const auto& m : mappings)
        if (addr >= m.start && addr < m.end) return &m;
    return nullptr;
}

class Discovery {
public:
    explicit Discovery(const ModuleDiscoveryInput& in) : in_(in) {}

    ModuleDiscovery run() {
        const MappedFile* exeMapping = mappingAt(in_.mappings, in_.atPhdr ? in_.atPhdr : in_.atEntry);
        std::string exePath = !in_.executable.empty() ? in_.executable : exeMapping ? exeMapping->path : "";
        out_.executable = in_.executableOverride.empty() ? exePath : in_.executableOverride;

        LinkMapResult linkMap = readLinkMap(*in_.memory, in_.atPhdr, in_.atPhnum);
        if (!linkMap.rDebug) {
            uint64_t rDebug = rDebugFromDynamicLinker();
            if (rDebug) linkMap = readLinkMapAt(*in_.memory, rDebug);
            startedThroughLoader_ = rDebug != 0;
        }
        // A static executable has no link map: the mappings pass below finds its modules.
        if (!linkMap.note.empty() && (linkMap.rDebug || !linkMap.entries.empty()))
            out_.warnings.push_back("link map: " + linkMap.note);

        for (const auto& e : linkMap.entries) {
            bool isExe = e.ns == 0 && e.name.empty() && !sawExecutable_;
            if (e.name.empty() && !isExe) continue;  // the executable repeated in another namespace
            LoadedModule mod;
            // The main map has no name; its file is the mapping holding its l_ld (AT_PHDR names
            // ld.so instead when the program was started as `ld.so PROGRAM`).
            const MappedFile* dynamicMapping = isExe && e.dynamic ? mappingAt(in_.mappings, e.dynamic) : nullptr;
            mod.path = isExe ? (dynamicMapping ? dynamicMapping->path : exePath) : e.name;
            mod.bias = e.bias;  // l_addr
            mod.linkMapNamespace = e.ns;
            mod.linkMapAddress = e.address;
            mod.start = startOf(mod.path, mod.bias);
            mod.buildIdInTarget = buildIdInMemory(*in_.pristine, mod.start);
            sawExecutable_ = sawExecutable_ || isExe;
            if (isExe && mod.path.empty() && in_.executableOverride.empty()) {
                out_.warnings.push_back("the target does not name its executable; pass --exe");
                continue;
            }
            add(std::move(mod), isExe);
        }
        addUnlistedMappings(exeMapping);
        if (!in_.executableOverride.empty() && !sawExecutable_)
            throw std::runtime_error("--exe " + in_.executableOverride + " does not match: the target maps no executable at its entry point");
        return std::move(out_);
    }

private:
    static bool isDynamicLinker(const std::string& path) {
        static const std::regex ldName(R"((^|/)ld-linux[-a-z0-9_]*\.so\.[12]$)");  // x86_64, aarch64
        return std::regex_search(path, ldName);
    }

    // The dynamic linker's exported _r_debug, for a program the kernel did not start itself.
    uint64_t rDebugFromDynamicLinker() const {
        for (const auto& m : in_.mappings) {
            if (m.fileOffset != 0 || !isDynamicLinker(m.path)) continue;
            std::string error;
            auto ld = ElfFile::open(resolveInSysroot(in_.search, m.path), &error);
            if (!ld) continue;
            auto sym = ld->findSymbol("_r_debug");
            if (!sym) continue;
            uint64_t rDebug = m.start - ld->firstLoadVaddr() + sym->value;
            auto version = in_.memory->readValue<int32_t>(rDebug);
            if (version && *version >= 1) return rDebug;
        }
        return 0;
    }

    uint64_t startOf(const std::string& path, uint64_t bias) const {
        uint64_t best = UINT64_MAX;  // the lowest mapping of this path at or above the bias
        for (const auto& m : in_.mappings)
            if (m.path == path && m.start >= bias && m.fileOffset == 0) best = std::min(best, m.start);
        return best == UINT64_MAX ? bias : best;
    }

    void add(LoadedModule mod, bool isExe) {
        std::string mapping;  // "start-end" of the module's first mapping: its /proc/PID/map_files name
        if (isExe && !in_.executableOverride.empty()) {
            mod.path = in_.executableOverride;
        } else {
            // By address: the loader's name and the kernel's can differ (/lib is /usr/lib on merged-/usr systems).
            for (const auto& m : in_.mappings)
                if (m.start == mod.start && m.fileOffset == 0) {
                    char range[64];
                    std::snprintf(range, sizeof range, "%llx-%llx", static_cast<unsigned long long>(m.start),
                                  static_cast<unsigned long long>(m.end));
                    mapping = range;
                    mod.deleted = m.deleted;
                }
        }
        std::vector<FileCandidate> candidates = fileCandidates(mod, in_.search, mapping);
        if (isExe && !in_.executableOverride.empty()) candidates = {{mod.path, "path"}};  // the file the user named, nothing else
        attachModuleFiles(mod, in_.search, candidates);
        // Without the process's mappings (a debugger's core: lldb hands over none) the module was
        // placed at its bias, where a non-PIE program has no ELF header: its file says where the
        // header is, so the build-id in memory is read there and the file verified after all.
        if (mod.elf && mod.buildIdInTarget.empty() && mod.bias + mod.elf->firstLoadVaddr() != mod.start) {
            std::string id = buildIdInMemory(*in_.pristine, mod.bias + mod.elf->firstLoadVaddr());
            if (!id.empty()) {
                mod.buildIdInTarget = id;
                if (id == mod.elf->buildId()) {
                    mod.problem.clear();
                } else {  // another build: look again, now that the target's build-id is known
                    mod.elf = nullptr;
                    mod.debugElf = nullptr;
                    attachModuleFiles(mod, in_.search, candidates);
                }
            }
        }
        if (mod.elf) {
            mod.start = mod.bias + mod.elf->firstLoadVaddr();
            mod.end = mod.bias + loadEnd(*mod.elf);
        } else {
            mod.end = mod.start + 1;
            for (const auto& m : in_.mappings)
                if (m.path == mod.path && m.start >= mod.start) mod.end = std::max(mod.end, m.end);
        }
        if (isExe && !in_.executableOverride.empty()) {
            if (!mod.elf) {
                bool mismatch = mod.problem.rfind("build-id mismatch", 0) == 0;
                throw std::runtime_error("--exe " + in_.executableOverride + (mismatch ? " does not match the core: " : ": ") + mod.problem);
            }
            GElf_Ehdr eh;
            bool verified = !mod.buildIdInTarget.empty() && mod.buildIdInTarget == mod.elf->buildId();
            if (in_.atEntry && gelf_getehdr(mod.elf->handle(), &eh) && mod.bias + eh.e_entry != in_.atEntry) {
                // `ld.so PROGRAM`: the kernel started ld.so, so AT_ENTRY is ld.so's, not PROGRAM's.
                const MappedFile* entry = mappingAt(in_.mappings, in_.atEntry);
                bool viaLoader = startedThroughLoader_ || (entry && isDynamicLinker(entry->path));
                if (!verified && !viaLoader)
                    throw std::runtime_error("--exe " + in_.executableOverride + " does not match: its entry point is not the one the process started at");
                if (viaLoader)
                    out_.warnings.push_back("the process was started through the dynamic loader (ld.so " + in_.executableOverride +
                                            "): " + in_.executableOverride + " is its main program" +
                                            (verified ? " (build-id verified)" : ""));
            }
        }
        if (!mod.problem.empty() && mod.problem != "no file") {
            std::string warning = mod.path + ": " + mod.problem;
            // A program moved, deleted or rebuilt since: its frames go unnamed and the stacks stop there.
            if (isExe && !mod.elf && in_.executableOverride.empty())
                warning += "; if the program was moved or rebuilt, give its file (--exe FILE, or the debugger's `file`)";
            out_.warnings.push_back(warning);
        }
        claimed_.insert({mod.path, mod.start});
        out_.modules.push_back(std::move(mod));
    }

    // Objects the dynamic linker does not list (a static executable, a custom loader): every
    // mapping at file offset 0 that holds an ELF header.
    void addUnlistedMappings(const MappedFile* exeMapping) {
        for (const auto& m : in_.mappings) {
            if (m.fileOffset != 0 || claimed_.count({m.path, m.start})) continue;
            bool inside = false;
            for (const auto& mod : out_.modules)
                if (m.start >= mod.start && m.start < mod.end) inside = true;
            if (inside) continue;
            auto eh = in_.memory->readValue<Elf64_Ehdr>(m.start);
            if (!eh || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_phnum > 256) continue;
            uint64_t firstLoad = 0;
            for (unsigned i = 0; i < eh->e_phnum; ++i) {
                auto ph = in_.memory->readValue<Elf64_Phdr>(m.start + eh->e_phoff + i * sizeof(Elf64_Phdr));
                if (ph && ph->p_type == PT_LOAD) {
                    firstLoad = ph->p_vaddr & ~uint64_t(0xfff);
                    break;
                }
            }
            LoadedModule mod;
            mod.path = m.path;
            mod.start = m.start;
            mod.bias = m.start - firstLoad;
            mod.linkMapNamespace = -1;
            mod.buildIdInTarget = buildIdInMemory(*in_.pristine, m.start);
            bool isExe = !sawExecutable_ && exeMapping && m.path == exeMapping->path;
            if (isExe) {
                mod.linkMapNamespace = 0;
                sawExecutable_ = true;
            }
            add(std::move(mod), isExe);
        }
    }

    const ModuleDiscoveryInput& in_;
    ModuleDiscovery out_;
    std::set<std::pair<std::string, uint64_t>> claimed_;
    bool sawExecutable_ = false;
    bool startedThroughLoader_ = false;  // AT_PHDR named ld.so: `ld.so PROGRAM`
};

}  // namespace

ModuleDiscovery discoverModules(const ModuleDiscoveryInput& input) { return Discovery(input).run(); }

}  // namespace pytstates
