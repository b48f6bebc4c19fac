// SPDX-License-Identifier: Apache-2.0
// A stopped thread's registers through ptrace, by the machine's rules (symbols/arch): the
// general registers as NT_PRSTATUS's pr_reg (PTRACE_GETREGSET, NT_PRSTATUS) and, where they are
// not among them, the thread pointer (aarch64's tpidr_el0: PTRACE_GETREGSET, NT_ARM_TLS).
#pragma once

#include <cstddef>
#include <cstdint>

#include "symbols/arch/arch.h"
#include "symbols/target.h"

namespace pytstates {

// Fills t's registers, pc, sp and thread pointer from the two register sets as the kernel gives
// them (tls may be null: no NT_ARM_TLS). The struct pthread is left to the caller for TLS
// variant I (it needs glibc's sizeof(struct pthread)). False when prReg is too short.
bool threadFromRegisterSets(const Arch& arch, const void* prReg, size_t prRegSize, const void* tls, size_t tlsSize, OsThread* t);

// PTRACE_GETREGSET on a ptrace-stopped thread of this machine; false when it fails.
bool readThreadRegisters(int tid, OsThread* t);

// The system call a blocked thread of this machine is in, as /proc/PID/task/TID/syscall says
// (the kernel's orig_rax or syscallno): for a debugger that hands over no such register (lldb).
// -1 when it runs, is in none, or the file is unreadable.
int64_t procThreadSyscall(int pid, int tid);

}  // namespace pytstates
