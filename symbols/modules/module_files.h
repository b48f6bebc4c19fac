// SPDX-License-Identifier: Apache-2.0
// Finding a module's files on disk: the file itself (under a sysroot), its separate debug
// file, and the build-id the target's memory carries for it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "symbols/elf/elf_file.h"
#include "symbols/modules/debuginfod_client.h"
#include "symbols/memory.h"
#include "symbols/target.h"

namespace pytstates {

struct FileSearch {
    std::string sysroot;                 // prefix for every absolute path the target names
    std::vector<std::string> debugDirs;  // extra roots holding .build-id/xx/yyyy.debug
    // A live process: "/proc/PID". Its files are read through /proc/PID/map_files (the very files
    // it mapped, even deleted or replaced ones) or /proc/PID/root (its mount namespace) first.
    std::string processDir;
    // Files still missing (or not matching) fetched by build-id from debuginfod; null: offline.
    std::shared_ptr<DebuginfodClient> debuginfod;
};

std::string resolveInSysroot(const FileSearch& search, const std::string& path);

// One place a module's file may be read from, and how it was found ("map_files", "root",
// "sysroot", "path", "debuginfod").
struct FileCandidate {
    std::string path;
    std::string via;
};

// The file with DWARF/.symtab for `file` (the module `modulePath` names): itself when it has
// .debug_info, else a separate debug file found by build-id or .gnu_debuglink (next to the
// module, under the sysroot, the process's root, the debug dirs, /usr/lib/debug, then debuginfod)
// whose build-id matches; else `file`.
std::shared_ptr<ElfFile> findDebugFile(const std::shared_ptr<ElfFile>& file, const FileSearch& search,
                                       const std::string& modulePath = {});

// Build-id of the ELF object mapped at `start`, from the target's own memory (the ELF header page
// that kernels and gcore dump); empty when that memory is not available.
std::string buildIdInMemory(const Memory& memory, uint64_t start);

// Where module.path may be read, best first: /proc/PID/map_files/<mapping> (mapping: the module's
// first mapping as "start-end" in hex, empty when unknown) and /proc/PID/root for a live process,
// then the sysroot, then the path itself.
std::vector<FileCandidate> fileCandidates(const LoadedModule& module, const FileSearch& search, const std::string& mapping);

// Opens the first candidate that is whole and carries the build-id the target's memory holds (when
// none does: the file debuginfod has for that build-id), and fills elf, debugElf, resolvedPath,
// fileVia and problem (why none fits, or a warning).
void attachModuleFiles(LoadedModule& module, const FileSearch& search, const std::vector<FileCandidate>& candidates);
void attachModuleFiles(LoadedModule& module, const FileSearch& search);  // candidates from fileCandidates(module, search, "")

// Address of a symbol in the target: bias + st_value, through the module's files.
std::optional<ElfSymbol> findModuleSymbol(const LoadedModule& module, const std::string& name);

}  // namespace pytstates
