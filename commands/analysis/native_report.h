// SPDX-License-Identifier: Apache-2.0
// Native stacks in the report: every thread's innermost native frame (its whole stack with
// --native, with the Python frames each eval-loop frame runs), the crashing thread's whole stack,
// and after the findings, which finding the crash is.
#pragma once

#include "commands/analysis/report.h"
#include "symbols/native/native_stacks.h"
#include "symbols/target.h"

namespace pytstates {

// Before the findings. `python` holds every thread state's whole Python stack (the runtimes' own
// lists may be cut to --frames).
void readNativeStacks(const Target& target, NativeStacks& stacks, const ReportOptions& options,
                      const std::vector<Runtime>& python, Report& report);

// Gives each eval-loop frame (not inlined) the Python frames it runs: from the innermost Python
// frame outwards, up to and including the next entry frame. Returns how many found no eval frame.
size_t mergePython(std::vector<NativeFrame>& frames, const std::vector<PyFrame>& py);

// After the findings: the finding whose pointer a frame of the crashing thread holds (a DWARF
// parameter first, else a register, else a word of its stack frame), and CPython's fatal error.
void explainCrash(const Target& target, Report& report);

}  // namespace pytstates
