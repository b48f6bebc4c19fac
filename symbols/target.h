// A Target is whatever pytstates analyses: a core file, a live process, or a debugger's
// inferior. It gives memory, OS threads with their thread pointer, and loaded modules.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "symbols/memory.h"

namespace pytstates {

class ElfFile;

struct OsThread {
    int lwp = 0;
    uint64_t threadPointer = 0;  // x86_64 fs_base == struct pthread* == pthread_self()
    uint64_t pc = 0;
    uint64_t sp = 0;
};

struct LoadedModule {
    std::string path;          // as the target names it
    std::string resolvedPath;  // the file we opened (sysroot applied), empty when not found
    uint64_t bias = 0;         // l_addr: runtime address minus link-time address
    uint64_t start = 0;        // lowest mapped address
    uint64_t end = 0;
    long linkMapNamespace = 0; // dlmopen namespace index (0 = the default one, -1 = not in r_debug)
    uint64_t linkMapAddress = 0;
    std::string buildIdInTarget;  // hex, from the target's memory; empty when unknown
    std::shared_ptr<ElfFile> elf; // null when the file is missing or does not match
    std::shared_ptr<ElfFile> debugElf;  // the file holding DWARF/.symtab (elf itself, or a separate debug file)
    std::string problem;          // why elf is null, or a warning
};

enum class TargetKind { Core, Live, Debugger };

class Target : public Memory {
public:
    virtual TargetKind kind() const = 0;
    virtual int pid() const = 0;
    virtual std::string executable() const = 0;
    virtual const std::vector<OsThread>& threads() const = 0;
    virtual const std::vector<LoadedModule>& modules() const = 0;
    // Things the reader noticed that the user should know (a truncated core, a mismatched file).
    virtual const std::vector<std::string>& warnings() const = 0;

    // How much the analysis read (for scripts/bench): read calls and bytes.
    struct ReadStats {
        size_t calls = 0, bytes = 0;
    };
    ReadStats readStats() const { return stats_; }

protected:
    void countRead(size_t bytes) const {
        ++stats_.calls;
        stats_.bytes += bytes;
    }

private:
    mutable ReadStats stats_;
};

}  // namespace pytstates
