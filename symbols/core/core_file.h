// An ELF core file as the kernel or gdb's gcore writes it: PT_LOAD segments and the notes
// (NT_PRSTATUS per thread, NT_FILE, NT_AUXV, NT_PRPSINFO). x86_64 only for now.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "symbols/elf/elf_file.h"
#include "symbols/modules/module_discovery.h"
#include "symbols/target.h"

namespace pytstates {

struct CoreSegment {
    uint64_t vaddr, memsz, offset, filesz;
    uint32_t flags;
};


class CoreFile {
public:
    // Throws std::runtime_error with a one-line reason when the file is unusable as a core.
    explicit CoreFile(const std::string& path);

    const std::string& path() const { return path_; }
    const std::vector<CoreSegment>& segments() const { return segments_; }
    const std::vector<OsThread>& threads() const { return threads_; }
    const std::vector<MappedFile>& mappedFiles() const { return mappedFiles_; }
    const std::map<uint64_t, uint64_t>& auxv() const { return auxv_; }
    uint64_t auxValue(uint64_t type) const;
    int pid() const { return pid_; }
    const std::string& commandName() const { return fname_; }
    const std::string& commandLine() const { return psargs_; }
    bool truncated() const { return truncated_; }

    // Bytes the core itself holds at addr (no fallback to mapped files).
    size_t read(uint64_t addr, void* buf, size_t len) const;
    // How many bytes from addr on the dumper deliberately left out (beyond a PT_LOAD's p_filesz,
    // or outside every PT_LOAD as gcore does for clean file pages); 0 when the core should
    // hold addr (dumped, or lost to truncation).
    uint64_t leftOutFrom(uint64_t addr) const;

private:
    void parseNotes(const unsigned char* data, size_t size);

    std::string path_;
    std::shared_ptr<ElfFile> elf_;
    std::vector<CoreSegment> segments_;  // sorted by vaddr
    std::vector<OsThread> threads_;
    std::vector<MappedFile> mappedFiles_;
    std::map<uint64_t, uint64_t> auxv_;
    int pid_ = 0;
    std::string fname_, psargs_;
    bool truncated_ = false;
};

}  // namespace pytstates
