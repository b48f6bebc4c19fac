// SPDX-License-Identifier: Apache-2.0
// Target over whatever a debugger (gdb, lldb) has open: a core, a live process, a remote stub.
// The front end supplies memory reads, threads (with their thread pointer) and the auxiliary
// vector; modules come from the link map like everywhere else. Threads the debugger gives no
// thread pointer for get theirs from glibc's thread lists in memory. Memory is cached per page so the
// analyses do not cross into the debugger's API for every field.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "symbols/modules/module_discovery.h"
#include "symbols/page_cache.h"
#include "symbols/target.h"

namespace pytstates {

struct DebuggerInput {
    // Reads up to len bytes at addr; returns how many were readable. Must not throw.
    std::function<size_t(uint64_t addr, void* buf, size_t len)> read;
    std::vector<OsThread> threads;
    uint64_t atPhdr = 0, atPhnum = 0, atEntry = 0;
    uint64_t atSysinfoEhdr = 0;  // the vDSO's image (AT_SYSINFO_EHDR); 0: unknown
    std::vector<MappedFile> mappings;  // optional: file mappings the debugger knows
    std::string executable;
    int pid = 0;
    bool live = false;
    FileSearch search;  // processDir: "/proc/PID" when the process runs on this machine
    // A core's fatal signal as the debugger knows it (gdb's $_siginfo, lldb's stop reason) of
    // its first thread; kept only when the signal is one that writes a core.
    std::optional<CrashSignal> crash;
    // A live process on this machine (lldb's host platform) even where search.processDir is not
    // set: its threads' names are read from /proc.
    bool localProcess = false;
};

class DebuggerTarget : public Target {
public:
    explicit DebuggerTarget(DebuggerInput input);

    size_t read(uint64_t addr, void* buf, size_t len) const override;
    TargetKind kind() const override { return input_.live ? TargetKind::Live : TargetKind::Core; }
    int pid() const override { return input_.pid; }
    std::string executable() const override { return executable_; }
    const std::vector<OsThread>& threads() const override { return input_.threads; }
    const std::vector<LoadedModule>& modules() const override { return modules_; }
    const std::vector<std::string>& warnings() const override { return warnings_; }
    std::optional<CrashSignal> crashSignal() const override;
    std::vector<int> namespacePids() const override { return namespacePids_; }
    std::string rootDirectory() const override { return root_; }
    std::optional<uint64_t> vdsoAddress() const override {
        return input_.atSysinfoEhdr ? std::optional<uint64_t>(input_.atSysinfoEhdr) : std::nullopt;
    }
    // The machine of the program the debugger has open (gdb-multiarch on an arm64 program through
    // qemu's gdb stub is not this machine): its executable's e_machine, else this machine's.
    const Arch& arch() const override { return *arch_; }
    // A live process on this machine: its /proc; a core: the main thread's (NT_PRPSINFO is not
    // reachable through the debugger, so none).
    std::optional<std::string> threadComm(int lwp) const override;
    // A live process on this machine (stopped by the debugger): its clock now; a core: none.
    std::optional<double> monotonicNow() const override;

private:
    void addExecutableSegments();
    void addFileSegments(const std::shared_ptr<ElfFile>& file, uint64_t bias);
    // got bytes read at addr; a read-only file page the debugger gave none or zeros of is filled
    // from its file. Returns how many bytes from addr are valid.
    size_t fillFromFiles(uint64_t addr, unsigned char* buf, size_t len, size_t got) const;
    void fitThreadsToArch();
    void fillMissingThreadPointers();

    DebuggerInput input_;
    PageCache cache_;
    std::string executable_;
    std::vector<LoadedModule> modules_;
    std::vector<std::string> warnings_;
    std::vector<int> namespacePids_;
    std::string root_ = "/";
    bool procVisible_ = false;  // a live process whose /proc this machine shows
    const Arch* arch_ = &hostArch();
    struct FileSegment {
        uint64_t start, end, offset;  // end: start + p_filesz
        std::shared_ptr<ElfFile> file;
    };
    std::vector<FileSegment> fileSegments_;  // read-only PT_LOAD segments of the modules' files
};

}  // namespace pytstates
