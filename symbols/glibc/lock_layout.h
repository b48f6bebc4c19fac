// SPDX-License-Identifier: Apache-2.0
// Where glibc keeps a lock's owner: pthread_mutex_t's __data.__owner (the owner's TID, kept by
// every mutex kind: normal, recursive, error-checking, robust, PI) and pthread_rwlock_t's
// __data.__cur_writer (the writer's TID; readers are not recorded). From libc's DWARF (libc6-dbg)
// when at hand, else from the layout glibc has kept since 2.25 on x86_64 and aarch64 (the
// defaults below; on x86_64 equal to the DWARF of Debian 12's 2.36 and Debian 13's 2.41-12+deb13u5,
// held by tests/unit/glibc_layout_check; on aarch64 to the same releases' arm64 libc6-dbg, held
// by glibc.lock_layout.arm64 on this machine's release).
#pragma once

#include <cstdint>
#include <string>

#include "symbols/target.h"

namespace pytstates {

struct LockLayout {
    int64_t mutexOwner = 8;       // int __owner in struct __pthread_mutex_s
    int64_t rwlockCurWriter = 24; // int __cur_writer in struct __pthread_rwlock_arch_t
    std::string source;           // "DWARF of /usr/lib/debug/..." or "table (glibc 2.25+, ...)"
};

LockLayout glibcLockLayout(const Target& target, bool useDwarf);

}  // namespace pytstates
