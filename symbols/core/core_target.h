// SPDX-License-Identifier: Apache-2.0
// Target over an ELF core. Memory the core left out (clean file pages) is served from the
// mapped files named in NT_FILE, each checked against the core by build-id.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "symbols/core/core_file.h"
#include "symbols/modules/module_files.h"
#include "symbols/target.h"

namespace pytstates {

struct CoreOptions {
    std::string corePath;
    std::string executable;  // --exe; empty: the one the core names
    FileSearch search;
    ProgressLine progress;   // lines while a compressed core is decompressed
    uint64_t maxDecoded = 0; // --max-decoded: what a compressed core may decode to (0: the space free for it)
};

class CoreTarget : public Target {
public:
    // Throws std::runtime_error (one line) when the core or the executable is unusable.
    explicit CoreTarget(const CoreOptions& options);

    size_t read(uint64_t addr, void* buf, size_t len) const override { return read(addr, buf, len, true); }
    size_t readOnce(uint64_t addr, void* buf, size_t len) const override { return read(addr, buf, len, false); }
    TargetKind kind() const override { return TargetKind::Core; }
    int pid() const override { return core_.pid(); }
    std::string executable() const override { return executable_; }
    const std::vector<OsThread>& threads() const override { return threads_; }
    const std::vector<LoadedModule>& modules() const override { return modules_; }
    const std::vector<std::string>& warnings() const override { return warnings_; }
    const Arch& arch() const override { return core_.arch(); }
    std::optional<CrashSignal> crashSignal() const override { return core_.crashSignal(); }
    std::optional<ProcessFacts> processFacts() const override { return core_.processFacts(); }
    std::string sysroot() const override { return search_.sysroot; }
    std::optional<uint64_t> vdsoAddress() const override;
    std::vector<std::string> mappedFilePaths() const override;
    const CoreFile& core() const { return core_; }

private:
    size_t read(uint64_t addr, void* buf, size_t len, bool keep) const;
    void buildModules(const CoreOptions& options);
    std::vector<MappedFile> mappingsFromAuxv(const CoreOptions& options);
    void addModuleMappings();
    void completeThreadPointers();
    const MappedFile* mappingAt(uint64_t addr) const;
    std::shared_ptr<ElfFile> fileForMapping(const MappedFile& m) const;

    CoreFile core_;
    std::vector<OsThread> threads_;
    // NT_FILE's mappings, or, for a core without it (qemu's), the modules' PT_LOAD segments placed
    // where the link map and the auxiliary vector say they are.
    std::vector<MappedFile> mappings_;
    bool synthesizedMappings_ = false;
    std::string executable_;
    std::vector<LoadedModule> modules_;
    std::vector<std::string> warnings_;
    FileSearch search_;
    mutable std::map<std::string, std::shared_ptr<ElfFile>> mappedFileCache_;  // path -> file (null: unusable)
};

}  // namespace pytstates
