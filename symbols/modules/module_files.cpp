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

std::shared_ptr<ElfFile> findDebugFile(const std::shared_ptr<ElfFile>& file, const FileSearch& search) {
    if (!file) return nullptr;
    if (file->hasDebugInfo()) return file;
    std::vector<std::string> candidates;
    const std::string& id = file->buildId();
    std::vector<std::string> roots = search.debugDirs;
    if (!search.sysroot.empty()) roots.push_back(search.sysroot + "/usr/lib/debug");
    roots.push_back("/usr/lib/debug");
    if (id.size() > 2)
        for (const auto& root : roots) candidates.push_back(root + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug");
    if (auto link = file->debugLink()) {
        std::string dir = dirName(file->path());
        candidates.push_back(dir + "/" + link->first);
        candidates.push_back(dir + "/.debug/" + link->first);
        for (const auto& root : roots) candidates.push_back(root + dir + "/" + link->first);
    }
    for (const auto& c : candidates) {
        if (!exists(c) || c == file->path()) continue;
        std::string error;
        auto debug = ElfFile::open(c, &error);
        if (debug && (id.empty() || debug->buildId() == id)) return debug;
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

void attachModuleFiles(LoadedModule& module, const FileSearch& search) {
    if (module.path.empty() || module.path[0] != '/') {
        module.problem = "no file";  // vdso, or a name the loader did not record
        return;
    }
    std::string resolved = resolveInSysroot(search, module.path);
    std::string error;
    auto file = ElfFile::open(resolved, &error);
    // The reasons below follow the module's path in messages: they name another file only when
    // the one read is not at that path (a sysroot).
    std::string where = resolved == module.path ? "" : " (" + resolved + ")";
    if (!file) {
        struct stat st;
        bool absent = ::stat(resolved.c_str(), &st) != 0;
        if (error.rfind(resolved + ": ", 0) == 0) error = error.substr(resolved.size() + 2);
        module.problem = (absent ? "missing" : "unusable") + where + ": " + error;
        return;
    }
    if (!file->integrityProblem().empty()) {
        module.problem = "unusable" + where + ": " + file->integrityProblem() + "; the file is not used";
        return;
    }
    if (!module.buildIdInTarget.empty() && module.buildIdInTarget != file->buildId()) {
        module.problem = "build-id mismatch: the target has " + module.buildIdInTarget + ", " + resolved + " has " +
                         (file->buildId().empty() ? "none" : file->buildId()) + "; the file is not used";
        return;
    }
    if (module.buildIdInTarget.empty())
        module.problem = "cannot be verified: the target's memory holds no build-id for it" +
                         std::string(file->buildId().empty() ? " and the file has none" : "") + "; " + resolved + " is used as is";
    module.resolvedPath = resolved;
    module.elf = file;
    module.debugElf = findDebugFile(file, search);
}

std::optional<ElfSymbol> findModuleSymbol(const LoadedModule& module, const std::string& name) {
    std::optional<ElfSymbol> sym;
    if (module.elf) sym = module.elf->findSymbol(name);
    if (!sym && module.debugElf && module.debugElf != module.elf) sym = module.debugElf->findSymbol(name);
    return sym;
}

}  // namespace pytstates
