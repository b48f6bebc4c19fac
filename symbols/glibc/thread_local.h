// SPDX-License-Identifier: Apache-2.0
// C/C++ thread-local variables of any module, for any thread: a dynamic block through the
// thread's DTV, or the static TLS block, below the thread pointer (TLS variant II, x86_64) or above
// it (variant I, aarch64). "Not allocated for this thread" is told apart from a NULL value.
#pragma once

#include <cstdint>
#include <optional>

#include "symbols/glibc/pthread_keys.h"
#include "symbols/target.h"

namespace pytstates {

struct ThreadLocal {
    enum class Status { Value, NotAllocated, Unreadable };
    Status status = Status::Unreadable;
    uint64_t address = 0;  // where the variable lives for this thread
    uint64_t value = 0;    // its first 8 bytes
};

// variableOffset: st_value of the STT_TLS symbol (offset inside the module's TLS block). The
// thread's struct pthread leads to its DTV (glibc's dtvp offset is relative to it), its thread
// pointer to the static blocks.
ThreadLocal readThreadLocal(const Target& target, const GlibcKeys& glibc, const LoadedModule& module,
                            uint64_t variableOffset, const OsThread& thread);
// A variable at a fixed offset from the thread pointer (initial-exec / local-exec TLS).
ThreadLocal readThreadPointerRelative(const Target& target, int64_t offset, uint64_t threadPointer);

const char* describe(ThreadLocal::Status status);

}  // namespace pytstates
