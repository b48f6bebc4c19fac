// SPDX-License-Identifier: Apache-2.0
// A Target is whatever pytstates analyses: a core file, a live process, or a debugger's
// inferior. It gives memory, OS threads with their thread pointer, and loaded modules.
#pragma once

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "symbols/arch/arch.h"
#include "symbols/memory.h"

namespace pytstates {

class ElfFile;
class DebugSession;
class DwarfTypes;

struct OsThread {
    int lwp = 0;
    uint64_t threadPointer = 0;  // the TLS register (fs_base on x86_64, tpidr_el0 on aarch64); 0: unknown
    uint64_t pthread = 0;        // its struct pthread == pthread_self() (== threadPointer on x86_64)
    uint64_t pc = 0;
    uint64_t sp = 0;
    std::vector<uint64_t> registers;  // DWARF-numbered (Arch::dwarfRegisters); empty: only pc and sp known
    int64_t syscall = -1;        // the system call's number in its registers (Arch::prRegSyscall); -1: none or unknown
    int signal = 0;              // the signal the thread was dumped or stopped with (pr_cursig), 0: none
    int namespaceLwp = 0;        // a live process in its own PID namespace: the thread's id there (NSpid); 0: none
};

// What a core's NT_PRPSINFO says of its process: the kernel's command name (comm, at most 15
// bytes), the first 80 bytes of its arguments (spaces between them), its parent and its ids.
struct ProcessFacts {
    std::string command, arguments;
    int ppid = 0;
    uint32_t uid = 0, gid = 0;
};

// The signal a core's process died of (NT_SIGINFO and the first thread's pr_cursig).
struct CrashSignal {
    int lwp = 0;                 // the thread that took it (the first thread of the core)
    int signal = 0;
    bool haveSiginfo = false;    // the fields below come from NT_SIGINFO
    int code = 0;                // si_code
    uint64_t faultAddress = 0;   // si_addr (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP)
    int senderPid = 0, senderUid = 0;  // si_pid, si_uid (signals sent by a process: si_code <= 0)
    // The thread faulted or aborted itself, and waits for nothing; a signal sent by another
    // process (kill) found it wherever it was, a wait included. Without siginfo (lldb gives none)
    // the signals a fault raises are the thread's own, and SIGABRT or SIGQUIT may have been sent.
    bool raisedByThread(int pid) const {
        // si_pid 0 with a sender's si_code: a sender the target's PID namespace cannot name (a
        // process outside it, or the kernel); the thread's own abort() gives its own pid.
        if (haveSiginfo) return !(code <= 0 && senderPid != pid);
        return signal == SIGILL || signal == SIGTRAP || signal == SIGBUS || signal == SIGFPE || signal == SIGSEGV || signal == SIGSYS;
    }
};

struct LoadedModule {
    std::string path;          // as the target names it
    std::string resolvedPath;  // the file we opened (sysroot applied), empty when not found
    std::string fileVia;       // how: "map_files", "root", "sysroot", "path", "debuginfod"
    bool deleted = false;      // the live process's mapping says the file was deleted (or replaced)
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
    // A live process's pid in each PID namespace it is in, outermost (ours) first (NSpid);
    // empty when unknown.
    virtual std::vector<int> namespacePids() const { return {}; }
    // A live process's root directory as we see it ("/" unless chrooted or in a container).
    virtual std::string rootDirectory() const { return "/"; }
    // The directory the user said holds the target's files (--sysroot); empty when none.
    virtual std::string sysroot() const { return {}; }
    // The machine the target runs on.
    virtual const Arch& arch() const { return hostArch(); }
    // What the process died of: a core written for a fatal signal. Empty for live targets and
    // for cores of running processes (gcore).
    virtual std::optional<CrashSignal> crashSignal() const { return std::nullopt; }
    // What a core says of its process (NT_PRPSINFO); nullopt for live targets (their /proc says
    // it) and debuggers' targets.
    virtual std::optional<ProcessFacts> processFacts() const { return std::nullopt; }
    // The paths of the files the process had mapped, as the target itself lists them apart from
    // its memory (a core's NT_FILE): what a core cut short still names when the link map is in
    // the part cut off. Empty when the target keeps no such list.
    virtual std::vector<std::string> mappedFilePaths() const { return {}; }
    // Where the kernel mapped the vDSO (AT_SYSINFO_EHDR); nullopt when unknown.
    virtual std::optional<uint64_t> vdsoAddress() const { return std::nullopt; }
    // The process's CLOCK_MONOTONIC (what time.monotonic() and an asyncio loop's time() read), in
    // seconds, at the moment its memory stands for: a live process's when it was stopped (now, if it
    // was not). nullopt for a core: it records no clock.
    virtual std::optional<double> monotonicNow() const { return std::nullopt; }
    // The kernel's name of a thread (its comm, at most 15 bytes): /proc/PID/task/TID/comm of a
    // live process. A core keeps none per thread; its NT_PRPSINFO's pr_fname is the main thread's
    // (the thread group leader's comm, in the kernel's cores and gcore's alike), but gdb and lldb
    // do not hand it over, so it is not used: the front ends name a core's threads alike.
    // nullopt: none known.
    virtual std::optional<std::string> threadComm(int lwp) const {
        (void)lwp;
        return std::nullopt;
    }

    // The modules' symbols, CFI and DWARF through libdwfl, made on first use (a second call with
    // another useDwarf makes a new one).
    const DebugSession& debugSession(bool useDwarf) const;
    // The struct layouts in a module's DWARF (DwarfTypes::cached: answered from the per-build-id
    // cache when it can), one reader per debug file for the whole run: a compressed .debug_info is
    // inflated once, however many analyses ask (each used to inflate it anew from its start).
    // nullptr when the module has no DWARF.
    DwarfTypes* dwarfTypes(const LoadedModule& module) const;
    // Their decompressed sections freed (DwarfTypes::release), their answers kept: once the
    // layouts are known, the memory goes to what reads the target.
    void releaseDwarfTypes() const;

    // How much the analysis read (for scripts/bench): read calls and bytes.
    struct ReadStats {
        size_t calls = 0, bytes = 0;
    };
    ReadStats readStats() const { return stats_; }

    // Names the part of the report the reads that follow are for: a live target that lets the
    // process run again before the report is done says which parts it read from the running
    // process (the rest comes from what it copied while the process was stopped).
    void readingFor(const char* part) const { part_ = part; }
    struct PartRead {
        std::string part;
        size_t reads = 0, bytes = 0;  // page reads from the running process, and their bytes
    };
    // nullopt: the target was not stopped and resumed (a core, a debugger's target, --no-stop).
    virtual std::optional<std::vector<PartRead>> readAfterResume() const { return std::nullopt; }
    // Whether any byte of [addr, addr + len) was fetched from the running process after the stop
    // ended (not from the stop's copy): a fact read there may postdate the snapshot.
    virtual bool readLate(uint64_t addr, size_t len) const {
        (void)addr;
        (void)len;
        return false;
    }

protected:
    const char* readingPart() const { return part_; }
    void countRead(size_t bytes) const {
        ++stats_.calls;
        stats_.bytes += bytes;
    }

private:
    mutable ReadStats stats_;
    mutable const char* part_ = "";
    mutable std::shared_ptr<DebugSession> debugSession_;
    mutable std::vector<std::shared_ptr<DebugSession>> retiredSessions_;  // replaced by another useDwarf
    // After the sessions: destroyed first (a reader may borrow a session's DWARF). By debug file.
    mutable std::vector<std::pair<const ElfFile*, std::shared_ptr<DwarfTypes>>> dwarfTypes_;
};

}  // namespace pytstates
