// SPDX-License-Identifier: Apache-2.0
// The target's modules reported once to elfutils' libdwfl: their symbol tables, CFI and DWARF,
// with each module's debug file found as module_files finds it. Shared by everything that reads
// DWARF (layouts, pybind11, the unwinder, symbolization) so a debug file's compressed sections are
// decompressed once per run, not once per reader.
#pragma once

#include <elfutils/libdwfl.h>

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

class DebugSession {
public:
    // useDwarf=false: symbol tables and CFI only; dwarf() always answers nullptr.
    DebugSession(const Target& target, bool useDwarf);
    ~DebugSession();
    DebugSession(const DebugSession&) = delete;
    DebugSession& operator=(const DebugSession&) = delete;

    bool useDwarf() const { return useDwarf_; }
    Dwfl* dwfl() const { return dwfl_; }
    size_t reportedModules() const { return byModule_.size(); }

    // The module's DWARF (nullptr without any, or with useDwarf false) and the bias that turns its
    // addresses into the target's.
    Dwarf* dwarf(const LoadedModule& module, Dwarf_Addr* bias = nullptr) const;
    // The module of the target a libdwfl module stands for; nullptr when none.
    const LoadedModule* moduleOf(Dwfl_Module* mod) const;

    // libdwfl takes thread callbacks once per session: the unwinder attaches them with the
    // session's slot as their argument and puts itself in the slot while it lives.
    bool attachThreads(const Dwfl_Thread_Callbacks* callbacks, int pid) const;
    void*& threadArg() const { return threadArg_; }

    // Debug files opened from now on (libdwfl opens each on its first use) are handed to libdw
    // decompressed, in temporary files (symbols/elf/plain_debug_file.h): for reports that read
    // DWARF at many pcs. Without it libdw inflates them into memory, which costs less time
    // when a report reads few.
    void decompressDebugFiles() const { decompressDebugFiles_ = true; }
    // Takes out of this process's memory the pages of those decompressed files that libdw read so
    // far (they stay in the page cache; libdw's next read of one maps it again): a report that
    // reads many CUs keeps only those it reads at once.
    void releaseDecompressedPages() const;

    struct ModuleInfo {
        const LoadedModule* module = nullptr;
        bool useDwarf = true;
        const bool* decompress = nullptr;  // the session's decompressDebugFiles
        bool decompressed = false;         // the debug file libdwfl opened is such a copy:
        uint64_t device = 0, inode = 0;    // this one
    };

private:
    void reportVdso(const Target& target);

    Dwfl* dwfl_ = nullptr;
    LoadedModule vdso_;  // the kernel's vDSO, read from the target's memory: module "[vdso]" 
    Dwfl_Callbacks callbacks_{};
    bool useDwarf_;
    std::deque<ModuleInfo> infos_;  // stable addresses: libdwfl keeps pointers to them
    std::map<const LoadedModule*, Dwfl_Module*> byModule_;
    mutable bool attached_ = false;
    mutable void* threadArg_ = nullptr;
    mutable bool decompressDebugFiles_ = false;
    mutable size_t mappedFiles_ = 0;                                 // decompressed files found in
    mutable std::vector<std::pair<uint64_t, uint64_t>> decompressedMaps_;  // these mappings (start, size)
};

}  // namespace pytstates
