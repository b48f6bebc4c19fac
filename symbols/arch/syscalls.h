// SPDX-License-Identifier: Apache-2.0
// The Linux system calls a blocked thread may sit in, by number, per machine: a thread whose
// innermost frame is a generic entry (glibc 2.41's __syscall_cancel_arch, syscall()) tells which
// call it made only by the number in its registers (orig_rax on x86_64, x8 on aarch64).
#pragma once

#include <cstdint>
#include <string>

#include "symbols/arch/arch.h"

namespace pytstates {

// "read", "futex", "clock_nanosleep"; empty for a number not in the table (calls that block for
// long: I/O, sleeps, waits, locks).
std::string syscallName(Machine machine, int64_t number);

}  // namespace pytstates
