// SPDX-License-Identifier: Apache-2.0
// Why a process called abort(): the C++ exception nobody caught (its type and what()), pybind11's
// error_already_set (the Python exception), a failed assert() or another glibc message
// (__abort_msg), CPython's fatal error; and the finding an abort follows from, when it came from a
// thread-state check on a thread whose pointers a finding names.
#pragma once

#include "commands/analysis/report.h"
#include "symbols/target.h"

namespace pytstates {

// After explainCrash.
void explainAbort(const Target& target, Report& report);

}  // namespace pytstates
