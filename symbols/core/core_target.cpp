#include "symbols/core/core_target.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace pytstates {

namespace {

// Memory exactly as the core holds it, for the build-id check (no fallback to files).
class CoreOnlyMemory : public Memory {
public:
    explicit CoreOnlyMemory(const CoreFile& core) : core_(core) {}
    size_t read(uint64_t addr, void* buf, size_t len) const override { return core_.read(addr, buf, len); }

private:
    const CoreFile& core_;
};

}  // namespace

CoreTarget::CoreTarget(const CoreOptions& options) : core_(options.corePath, options.progress), search_(options.search) {
    if (core_.truncated()) warnings_.push_back("the core is truncated: some memory is missing");
    buildModules(options);
}

const MappedFile* CoreTarget::mappingAt(uint64_t addr) const {
    for (const auto& m : core_.mappedFiles())
        if (addr >= m.start && addr < m.end) return &m;
    return nullptr;
}

std::shared_ptr<ElfFile> CoreTarget::fileForMapping(const MappedFile& m) const {
    for (const auto& mod : modules_)
        if (mod.path == m.path && m.start >= mod.start && m.start < mod.end) return mod.elf;  // null when mismatched
    auto it = mappedFileCache_.find(m.path);
    if (it != mappedFileCache_.end()) return it->second;
    std::string error;
    auto file = ElfFile::open(resolveInSysroot(search_, m.path), &error);
    mappedFileCache_[m.path] = file;
    return file;
}

size_t CoreTarget::read(uint64_t addr, void* buf, size_t len) const {
    countRead(len);
    auto* out = static_cast<unsigned char*>(buf);
    size_t done = 0;
    while (done < len) {
        size_t got = core_.read(addr + done, out + done, len - done);
        done += got;
        if (done == len) break;
        // Left out by the dumper (a clean file page): served from the mapped file. Bytes a
        // truncated core lost are not: the file holds what was there before the process ran.
        uint64_t a = addr + done;
        uint64_t leftOut = core_.leftOutFrom(a);
        const MappedFile* m = leftOut ? mappingAt(a) : nullptr;
        if (!m) break;
        auto file = fileForMapping(*m);
        if (!file) break;
        uint64_t n = std::min<uint64_t>({len - done, m->end - a, leftOut});
        uint64_t off = m->fileOffset + (a - m->start);
        if (off >= file->fileSize()) break;
        n = std::min<uint64_t>(n, file->fileSize() - off);
        const unsigned char* p = file->rawBytes(off, n);
        if (!p || n == 0) break;
        std::memcpy(out + done, p, n);
        done += n;
    }
    return done;
}

void CoreTarget::buildModules(const CoreOptions& options) {
    CoreOnlyMemory coreOnly(core_);
    ModuleDiscoveryInput in;
    in.memory = this;
    in.pristine = &coreOnly;
    in.atPhdr = core_.auxValue(AT_PHDR);
    in.atPhnum = core_.auxValue(AT_PHNUM);
    in.atEntry = core_.auxValue(AT_ENTRY);
    in.mappings = core_.mappedFiles();
    in.executableOverride = options.executable;
    in.search = search_;
    ModuleDiscovery found = discoverModules(in);
    executable_ = found.executable;
    modules_ = std::move(found.modules);
    warnings_.insert(warnings_.end(), found.warnings.begin(), found.warnings.end());
}

}  // namespace pytstates
