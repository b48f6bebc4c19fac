// SPDX-License-Identifier: Apache-2.0
// Every thread of a process from glibc's own lists (_rtld_global._dl_stack_used and
// _dl_stack_user), each with its struct pthread and tid, read from memory alone: for targets
// that give no registers (a process read without stopping it, a debugger without fs_base).
#pragma once

#include <vector>

#include "symbols/target.h"

namespace pytstates {

// Empty when glibc's descriptors or lists cannot be read. Each thread's pthread, and its thread
// pointer by the machine's TLS rules.
std::vector<OsThread> threadsFromGlibcLists(const Target& target);

// sizeof(struct pthread) from glibc's _thread_db_sizeof_pthread; 0 when unknown. On aarch64 the
// thread pointer lies that far above the struct pthread.
uint64_t glibcSizeofPthread(const Target& target);

}  // namespace pytstates
