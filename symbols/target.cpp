// SPDX-License-Identifier: Apache-2.0
#include "symbols/target.h"

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/debug_session.h"

namespace pytstates {

const DebugSession& Target::debugSession(bool useDwarf) const {
    if (!debugSession_ || debugSession_->useDwarf() != useDwarf) {
        if (debugSession_) retiredSessions_.push_back(debugSession_);  // a DwarfTypes may read its DWARF still
        debugSession_ = std::make_shared<DebugSession>(*this, useDwarf);
    }
    return *debugSession_;
}

DwarfTypes* Target::dwarfTypes(const LoadedModule& module) const {
    const ElfFile* file = module.debugElf.get();
    if (!file || !file->hasDebugInfo()) return nullptr;
    for (const auto& [f, types] : dwarfTypes_)
        if (f == file) return types.get();
    // The reader outlives this call: it finds the module again by its place in modules().
    const auto& mods = modules();
    if (&module < mods.data() || &module >= mods.data() + mods.size()) return nullptr;
    size_t index = static_cast<size_t>(&module - mods.data());
    std::shared_ptr<DwarfTypes> types = DwarfTypes::cached(
        [this, index]() -> ::Dwarf* {
            const auto& now = modules();
            return index < now.size() ? debugSession(true).dwarf(now[index]) : nullptr;
        },
        *file);
    dwarfTypes_.emplace_back(file, types);
    return types.get();
}

void Target::releaseDwarfTypes() const {
    for (const auto& entry : dwarfTypes_)
        if (entry.second) entry.second->release();
}

}  // namespace pytstates
