#include "symbols/debugger/debugger_target.h"


namespace pytstates {

DebuggerTarget::DebuggerTarget(DebuggerInput input)
    : input_(std::move(input)), cache_([this](uint64_t addr, void* buf, size_t len) {
          return input_.read ? input_.read(addr, buf, len) : 0;
      }) {
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

size_t DebuggerTarget::read(uint64_t addr, void* buf, size_t len) const {
    countRead(len);
    return cache_.read(addr, buf, len);
}

}  // namespace pytstates
