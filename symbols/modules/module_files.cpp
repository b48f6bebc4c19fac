// SPDX-License-Identifier: Apache-2.0
#include "symbols/modules/module_files.h"

#include <elf.h>
#include <sys/stat.h>

#include <cstring>

#include <vector>

namespace pytstates {

namespace {
bool exists(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
std::string dirName(const std::string& p) {
    auto slash = p.rfind('/');
    return slash == std::string::npos ? "." : p.substr(0, slash);
}
}  // namespace

std::string resolveInSysroot(const FileSearch& search, const std::string& path) {
    if (!search.sysroot.empty() && !path.empty() && path[0] == '/') {
        std::string candidate = search.sysroot + path;
        if (exists(candidate)) return candidate;
    }
    return path;
}

std::shared_ptr<ElfFile> findDebugFile(const std::shared_ptr<ElfFile>& file, const FileSearch& search, const std::string& modulePath) {
    if (!file) return nullptr;
    if (file->hasDebugInfo()) return file;
    std::vector<std::string> candidates;
    const std::string& id = file->buildId();
    // Prefixes under which the target's own paths live: its root (live), the sysroot, this machine.
    std::vector<std::string> prefixes;
    if (!search.processDir.empty()) prefixes.push_back(search.processDir + "/root");
    if (!search.sysroot.empty()) prefixes.push_back(search.sysroot);
    prefixes.emplace_back();
    std::vector<std::string> roots = search.debugDirs;
    for (const auto& prefix : prefixes) roots.push_back(prefix + "/usr/lib/debug");
    if (id.size() > 2)
        for (const auto& root : roots) candidates.push_back(root + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug");
    if (auto link = file->debugLink()) {
        // Next to the module as the target names it (the file opened may be /proc/PID/map_files/...).
        std::string dir = dirName(modulePath.empty() || modulePath[0] != '/' ? file->path() : modulePath);
        for (const auto& prefix : prefixes) {
            candidates.push_back(prefix + dir + "/" + link->first);
            candidates.push_back(prefix + dir + "/.debug/" + link->first);
        }
        for (const auto& root : roots) candidates.push_back(root + dir + "/" + link->first);
    }
    for (const auto& c : candidates) {
        if (!exists(c) || c == file->path()) continue;
        std::string error;
        auto debug = ElfFile::open(c, &error);
        if (debug && (id.empty() || debug->buildId() == id)) return debug;
    }
    if (search.debuginfod && !id.empty())
        if (auto fetched = search.debuginfod->debugInfo(id, modulePath.empty() ? file->path() : modulePath)) {
            std::string error;
            auto debug = ElfFile::open(*fetched, &error);
            if (debug && debug->buildId() == id) return debug;
        }
    return file;
}

std::string buildIdInMemory(const Memory& memory, uint64_t start) {
    auto ehdr = memory.readValue<Elf64_Ehdr>(start);
    if (!ehdr || std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0 || ehdr->e_phnum > 256) return {};
    std::vector<Elf64_Phdr> phdrs(ehdr->e_phnum);
    if (!memory.readExact(start + ehdr->e_phoff, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr))) return {};
    uint64_t firstLoad = UINT64_MAX;
    for (const auto& ph : phdrs)
        if (ph.p_type == PT_LOAD) firstLoad = std::min<uint64_t>(firstLoad, ph.p_vaddr & ~uint64_t(0xfff));
    if (firstLoad == UINT64_MAX) return {};
    uint64_t bias = start - firstLoad;
    for (const auto& ph : phdrs) {
        if (ph.p_type != PT_NOTE || ph.p_filesz > 65536) continue;
        std::vector<unsigned char> notes(ph.p_filesz);
        if (!memory.readExact(bias + ph.p_vaddr, notes.data(), notes.size())) continue;
        std::string id = buildIdFromNotes(notes.data(), notes.size());
        if (!id.empty()) return id;
    }
    return {};
}

std::vector<FileCandidate> fileCandidates(const LoadedModule& module, const FileSearch& search, const std::string& mapping) {
    std::vector<FileCandidate> out;
    if (module.path.empty() || module.path[0] != '/') return out;
    if (!search.processDir.empty()) {
        if (!mapping.empty()) out.push_back({search.processDir + "/map_files/" + mapping, "map_files"});
        out.push_back({search.processDir + "/root" + module.path, "root"});
    }
    if (!search.sysroot.empty()) out.push_back({search.sysroot + module.path, "sysroot"});
    out.push_back({module.path, "path"});
    return out;
}

void attachModuleFiles(LoadedModule& module, const FileSearch& search) {
    attachModuleFiles(module, search, fileCandidates(module, search, ""));
}

void attachModuleFiles(LoadedModule& module, const FileSearch& search, const std::vector<FileCandidate>& candidates) {
    if (module.path.empty() || module.path[0] != '/' || candidates.empty()) {
        module.problem = "no file";  // vdso, or a name the loader did not record
        return;
    }
    // Why no candidate fits: a file that does not match outweighs one that is absent.
    std::string missing, mismatch;
    auto fits = [&](const FileCandidate& candidate) {
        const std::string& resolved = candidate.path;
        std::string error;
        auto file = ElfFile::open(resolved, &error);
        // The reasons below follow the module's path in messages: they name another file only when
        // the one read is not at that path (a sysroot, the process's root).
        std::string where = resolved == module.path ? "" : " (" + resolved + ")";
        if (!file) {
            struct stat st;
            bool absent = ::stat(resolved.c_str(), &st) != 0;
            if (error.rfind(resolved + ": ", 0) == 0) error = error.substr(resolved.size() + 2);
            std::string words = (absent ? "missing" : "unusable") + where + ": " + error;
            // /proc/PID/map_files and /proc/PID/root are ways in, not places the user named: only
            // their mismatches are worth a word.
            if ((candidate.via == "path" || candidate.via == "sysroot") && missing.empty()) missing = words;
            if (!absent && mismatch.empty()) mismatch = words;
            return false;
        }
        if (!file->integrityProblem().empty()) {
            if (mismatch.empty()) mismatch = "unusable" + where + ": " + file->integrityProblem() + "; the file is not used";
            return false;
        }
        if (!module.buildIdInTarget.empty() && module.buildIdInTarget != file->buildId()) {
            if (mismatch.empty())
                mismatch = "build-id mismatch: the target has " + module.buildIdInTarget + ", " + resolved + " has " +
                           (file->buildId().empty() ? "none" : file->buildId()) + "; the file is not used";
            return false;
        }
        module.problem.clear();
        if (module.buildIdInTarget.empty())
            module.problem = "cannot be verified: the target's memory holds no build-id for it" +
                             std::string(file->buildId().empty() ? " and the file has none" : "") + "; " + resolved + " is used as is";
        module.resolvedPath = resolved;
        module.fileVia = candidate.via;
        module.elf = file;
        module.debugElf = findDebugFile(file, search, module.path);
        return true;
    };
    for (const auto& candidate : candidates)
        if (fits(candidate)) return;
    if (search.debuginfod && !module.buildIdInTarget.empty())
        if (auto fetched = search.debuginfod->executable(module.buildIdInTarget, module.path))
            if (fits({*fetched, "debuginfod"})) return;
    module.problem = !mismatch.empty() ? mismatch : !missing.empty() ? missing : "missing";
}

std::optional<ElfSymbol> findModuleSymbol(const LoadedModule& module, const std::string& name) {
    std::optional<ElfSymbol> sym;
    if (module.elf) sym = module.elf->findSymbol(name);
    if (!sym && module.debugElf && module.debugElf != module.elf) sym = module.debugElf->findSymbol(name);
    return sym;
}

}  // namespace pytstates
