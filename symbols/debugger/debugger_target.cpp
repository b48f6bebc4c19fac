#include "symbols/debugger/debugger_target.h"

#include <algorithm>
#include <cstring>

namespace pytstates {

namespace {
constexpr uint64_t kPage = 4096;
}

DebuggerTarget::DebuggerTarget(DebuggerInput input) : input_(std::move(input)) {
    ModuleDiscoveryInput in;
    in.memory = this;
    in.pristine = this;
    in.atPhdr = input_.atPhdr;
    in.atPhnum = input_.atPhnum;
    in.atEntry = input_.atEntry;
    in.mappings = input_.mappings;
    in.executable = input_.executable;
    in.search = input_.search;
    ModuleDiscovery found = discoverModules(in);
    executable_ = found.executable;
    modules_ = std::move(found.modules);
    warnings_ = std::move(found.warnings);
}

const DebuggerTarget::Page& DebuggerTarget::page(uint64_t base) const {
    auto it = cache_.find(base);
    if (it != cache_.end()) return it->second;
    Page p;
    p.bytes.resize(kPage);
    ++debuggerReads_;
    p.valid = input_.read ? input_.read(base, p.bytes.data(), kPage) : 0;
    if (p.valid == 0) {
        // A page the debugger cannot read whole may still be readable in part (a short
        // mapping at the end of a core segment): try its first bytes alone.
        p.valid = input_.read ? input_.read(base, p.bytes.data(), 8) : 0;
        if (p.valid < 8) p.valid = 0;
    }
    return cache_.emplace(base, std::move(p)).first->second;
}

size_t DebuggerTarget::read(uint64_t addr, void* buf, size_t len) const {
    auto* out = static_cast<unsigned char*>(buf);
    size_t done = 0;
    while (done < len) {
        uint64_t a = addr + done;
        uint64_t base = a & ~(kPage - 1);
        const Page& p = page(base);
        uint64_t offset = a - base;
        if (offset >= p.valid) break;
        size_t n = static_cast<size_t>(std::min<uint64_t>(len - done, p.valid - offset));
        std::memcpy(out + done, p.bytes.data() + offset, n);
        done += n;
        if (p.valid < kPage && offset + n >= p.valid) break;
    }
    return done;
}

}  // namespace pytstates
