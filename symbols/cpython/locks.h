// SPDX-License-Identifier: Apache-2.0
// CPython's lock objects as a blocked thread's frames hand them over: _thread.RLock (threading's
// RLock) records its owner, as the owning thread's pthread_t (threading.get_ident()); a plain
// _thread.lock or a PyMutex records none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "symbols/cpython/runtimes.h"
#include "symbols/target.h"

namespace pytstates {

struct RLockLayout {
    int64_t owner = -1;  // rlockobject.rlock_owner (<= 3.13), rlockobject.lock.thread (3.14+); -1: unknown
    std::string source;  // "DWARF of ..." or "table (...)"; why unknown otherwise
};

RLockLayout rlockLayout(const Target& target, const Runtime& runtime, bool useDwarf);

// Where a _thread.lock (lockobject) keeps its PyMutex (3.14+), from the lock object's start: a
// waiter's parking-lot address less this is the lock. Empty before 3.14 (the lock is a
// PyThread_type_lock pointer) or when unknown.
std::optional<int64_t> lockMutexOffset(const Target& target, const Runtime& runtime, bool useDwarf);

// The owner's thread ident (pthread_t), 0 when free; nullopt when unreadable or the layout unknown.
std::optional<uint64_t> rlockOwner(const Memory& memory, uint64_t rlock, const RLockLayout& layout);

// Whether a live target gave the owner's field from the running process, after the stop ended.
bool rlockOwnerReadLate(const Target& target, uint64_t rlock, const RLockLayout& layout);

}  // namespace pytstates
