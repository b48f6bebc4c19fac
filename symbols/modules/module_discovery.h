// SPDX-License-Identifier: Apache-2.0
// The loaded modules of a process, from what any target can give: its memory (the dynamic
// linker's link map, found through auxv AT_PHDR), and the file mappings it knows (a core's
// NT_FILE, /proc/PID/maps) for objects the linker does not list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbols/memory.h"
#include "symbols/modules/module_files.h"
#include "symbols/target.h"

namespace pytstates {

struct MappedFile {
    uint64_t start, end, fileOffset;  // fileOffset in bytes
    std::string path;                 // without the " (deleted)" /proc/PID/maps appends
    bool deleted = false;             // the file was deleted (or replaced) after it was mapped
};

struct ModuleDiscoveryInput {
    const Memory* memory = nullptr;        // the target's memory
    const Memory* pristine = nullptr;      // memory without any fallback to files (build-id check); may equal memory
    uint64_t atPhdr = 0, atPhnum = 0, atEntry = 0;
    std::vector<MappedFile> mappings;      // may be empty
    std::string executable;                // the executable's path as the target names it
    std::string executableOverride;        // --exe: refused (throws) when it does not match
    FileSearch search;
};

struct ModuleDiscovery {
    std::vector<LoadedModule> modules;
    std::string executable;
    std::vector<std::string> warnings;
};

// Throws std::runtime_error when executableOverride does not match the target.
ModuleDiscovery discoverModules(const ModuleDiscoveryInput& input);

}  // namespace pytstates
