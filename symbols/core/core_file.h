// SPDX-License-Identifier: Apache-2.0
// An ELF core file as the kernel, gdb's gcore or qemu writes it: PT_LOAD segments and the notes
// (NT_PRSTATUS per thread with its registers and pr_cursig, NT_SIGINFO, NT_FILE, NT_AUXV,
// NT_PRPSINFO, NT_ARM_TLS). x86_64 and aarch64, by the rules of symbols/arch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "symbols/arch/arch.h"
#include "symbols/core/compressed_core.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/module_discovery.h"
#include "symbols/page_cache.h"
#include "symbols/target.h"

namespace pytstates {

struct CoreSegment {
    uint64_t vaddr, memsz, offset, filesz;
    uint32_t flags;
};


class CoreFile {
public:
    // Throws std::runtime_error with a one-line reason when the file is unusable as a core.
    // A core compressed by systemd-coredump (zstd, lz4, xz) or by gzip is decompressed first into an unlinked
    // temporary file (compressed_core.h), telling `progress` as it goes, of at most `maxDecoded`
    // bytes (0: the space free where it goes).
    explicit CoreFile(const std::string& path, const ProgressLine& progress = {}, uint64_t maxDecoded = 0);

    const std::string& path() const { return path_; }
    const std::vector<CoreSegment>& segments() const { return segments_; }
    const std::vector<OsThread>& threads() const { return threads_; }
    const std::vector<MappedFile>& mappedFiles() const { return mappedFiles_; }
    const std::map<uint64_t, uint64_t>& auxv() const { return auxv_; }
    uint64_t auxValue(uint64_t type) const;
    int pid() const { return pid_; }
    const std::string& commandName() const { return fname_; }
    const std::string& commandLine() const { return psargs_; }
    // NT_PRPSINFO's command name, arguments (the first 80 bytes), parent pid, uid and gid; nullopt without one.
    std::optional<ProcessFacts> processFacts() const;
    bool truncated() const { return truncated_; }
    // A compressed core whose stream went on past the core's end: that end (0 otherwise).
    uint64_t ignoredFrom() const { return ignoredFrom_; }
    const Arch& arch() const { return *arch_; }
    // The fatal signal the core was written for; empty for a core of a running process.
    std::optional<CrashSignal> crashSignal() const;

    // Bytes the core itself holds at addr (no fallback to mapped files); `keep`: the pages read
    // stay in the page cache for the reads to come.
    size_t read(uint64_t addr, void* buf, size_t len, bool keep = true) const;
    // How many bytes from addr on the dumper deliberately left out (beyond a PT_LOAD's p_filesz,
    // or outside every PT_LOAD as gcore does for clean file pages); 0 when the core should
    // hold addr (dumped, or lost to truncation).
    uint64_t leftOutFrom(uint64_t addr) const;

private:
    void parseNotes(const unsigned char* data, size_t size);

    struct Siginfo {
        int signo = 0, code = 0, pid = 0, uid = 0;
        uint64_t address = 0;
    };

    std::string path_;
    std::shared_ptr<ElfFile> elf_;      // read with pread, never mapped
    PageCache fileCache_;               // the core's pages, by file offset
    const Arch* arch_ = nullptr;
    std::vector<std::optional<Siginfo>> siginfo_;  // per thread, in threads_ order
    std::vector<CoreSegment> segments_;  // sorted by vaddr
    mutable size_t lastSegment_ = 0;     // the one read last: the next read is most often in it too
    std::vector<OsThread> threads_;
    std::vector<MappedFile> mappedFiles_;
    std::map<uint64_t, uint64_t> auxv_;
    int pid_ = 0, ppid_ = 0;
    uint32_t uid_ = 0, gid_ = 0;
    bool havePrpsinfo_ = false;
    std::string fname_, psargs_;
    bool truncated_ = false;
    uint64_t ignoredFrom_ = 0;
};

}  // namespace pytstates
