// SPDX-License-Identifier: Apache-2.0
#include "symbols/glibc/lock_layout.h"

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/debug_session.h"
#include "symbols/text/base_name.h"

namespace pytstates {

namespace {

bool isLibc(const std::string& path) {
    std::string name = baseName(path);
    return name == "libc.so.6" || (name.rfind("libc-2.", 0) == 0 && name.find(".so") != std::string::npos);
}

}  // namespace

LockLayout glibcLockLayout(const Target& target, bool useDwarf) {
    LockLayout layout;
    layout.source = std::string("table (glibc 2.25 and later on ") + target.arch().name + ", as in 2.36 and 2.41 on x86_64 and aarch64)";
    if (!useDwarf) return layout;
    for (const auto& mod : target.modules()) {
        if (!isLibc(mod.path) || !mod.debugElf || !mod.debugElf->hasDebugInfo()) continue;
        auto types = DwarfTypes::borrow(target.debugSession(useDwarf).dwarf(mod), mod.debugElf->path());
        if (!types) continue;
        auto owner = types->memberOffset("pthread_mutex_t", "__data.__owner");
        auto writer = types->memberOffset("pthread_rwlock_t", "__data.__cur_writer");
        if (!owner || !writer) continue;
        layout.mutexOwner = *owner;
        layout.rwlockCurWriter = *writer;
        layout.source = "DWARF of " + mod.debugElf->path();
        break;
    }
    return layout;
}

}  // namespace pytstates
