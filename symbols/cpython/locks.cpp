// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/locks.h"

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/debug_session.h"

namespace pytstates {

RLockLayout rlockLayout(const Target& target, const Runtime& runtime, bool useDwarf) {
    RLockLayout layout;
    const auto& modules = target.modules();
    if (useDwarf && runtime.moduleIndex < modules.size()) {
        const LoadedModule& mod = modules[runtime.moduleIndex];
        if (mod.debugElf && mod.debugElf->hasDebugInfo())
            if (auto types = DwarfTypes::borrow(target.debugSession(useDwarf).dwarf(mod), mod.debugElf->path())) {
                auto owner = types->memberOffset("rlockobject", "rlock_owner");
                if (!owner) owner = types->memberOffset("rlockobject", "lock.thread");
                if (owner) {
                    layout.owner = *owner;
                    layout.source = "DWARF of " + mod.debugElf->path();
                    return layout;
                }
            }
    }
    if (runtime.layout.freeThreaded) {
        layout.source = "a free-threaded build's rlockobject is known from DWARF only";
        return layout;
    }
    // PyObject_HEAD (16 bytes), then the lock pointer (<= 3.13) or the PyMutex padded to 8 (3.14+),
    // then the owner: 24 in every GIL build from 3.8 to 3.15.
    layout.owner = 24;
    layout.source = "table (CPython 3.8-3.15 with a GIL)";
    return layout;
}

std::optional<int64_t> lockMutexOffset(const Target& target, const Runtime& runtime, bool useDwarf) {
    // The PyMutex came in 3.14 and was backported to 3.13.1 (gh-117721); 3.13.0's lockobject
    // holds a PyThread_type_lock (lock_lock), a pointer to a lock elsewhere.
    if (runtime.layout.minor < 13) return std::nullopt;
    bool micro13 = runtime.layout.minor == 13;
    if (micro13 && runtime.versionHex && ((runtime.versionHex >> 8) & 0xff) < 1) return std::nullopt;
    const auto& modules = target.modules();
    if (useDwarf && runtime.moduleIndex < modules.size()) {
        const LoadedModule& mod = modules[runtime.moduleIndex];
        if (mod.debugElf && mod.debugElf->hasDebugInfo())
            if (auto types = DwarfTypes::borrow(target.debugSession(useDwarf).dwarf(mod), mod.debugElf->path()))
                if (auto offset = types->memberOffset("lockobject", "lock")) return *offset;
    }
    // PyObject_HEAD then the PyMutex, in every GIL build from 3.13.1 on (a 3.13 whose micro
    // is unknown is not guessed); a free-threaded head is longer, known from DWARF only.
    if (runtime.layout.freeThreaded || (micro13 && !runtime.versionHex)) return std::nullopt;
    return 16;
}

std::optional<uint64_t> rlockOwner(const Memory& memory, uint64_t rlock, const RLockLayout& layout) {
    if (layout.owner < 0 || !rlock) return std::nullopt;
    return memory.readValue<uint64_t>(rlock + static_cast<uint64_t>(layout.owner));
}

bool rlockOwnerReadLate(const Target& target, uint64_t rlock, const RLockLayout& layout) {
    return layout.owner >= 0 && target.readLate(rlock + static_cast<uint64_t>(layout.owner), sizeof(uint64_t));
}

}  // namespace pytstates
