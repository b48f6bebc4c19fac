// Finding a module's files on disk: the file itself (under a sysroot), its separate debug
// file, and the build-id the target's memory carries for it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "symbols/elf/elf_file.h"
#include "symbols/memory.h"
#include "symbols/target.h"

namespace pytstates {

struct FileSearch {
    std::string sysroot;                 // prefix for every absolute path the target names
    std::vector<std::string> debugDirs;  // extra roots holding .build-id/xx/yyyy.debug
};

std::string resolveInSysroot(const FileSearch& search, const std::string& path);

// The file with DWARF/.symtab for `file`: itself when it has .debug_info, else a separate
// debug file found by build-id or .gnu_debuglink whose build-id matches; else `file`.
std::shared_ptr<ElfFile> findDebugFile(const std::shared_ptr<ElfFile>& file, const FileSearch& search);

// Build-id of the ELF object mapped at `start`, from the target's own memory (the ELF header page
// that kernels and gcore dump); empty when that memory is not available.
std::string buildIdInMemory(const Memory& memory, uint64_t start);

// Opens module.path under the search roots, checks it against buildIdInTarget, and fills elf,
// debugElf, resolvedPath and problem.
void attachModuleFiles(LoadedModule& module, const FileSearch& search);

// Address of a symbol in the target: bias + st_value, through the module's files.
std::optional<ElfSymbol> findModuleSymbol(const LoadedModule& module, const std::string& name);

}  // namespace pytstates
