// Every thread of a process from glibc's own lists (_rtld_global._dl_stack_used and
// _dl_stack_user), each with its struct pthread and tid, read from memory alone: for targets
// that give no registers (a process read without stopping it, a debugger without fs_base).
#pragma once

#include <vector>

#include "symbols/target.h"

namespace pytstates {

// Empty when glibc's descriptors or lists cannot be read.
std::vector<OsThread> threadsFromGlibcLists(const Target& target);

}  // namespace pytstates
