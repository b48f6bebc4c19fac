// SPDX-License-Identifier: Apache-2.0
// What Python itself says about its threads and interpreters: each thread's name (Thread.name,
// else the kernel's), each interpreter's state (running or finalizing, and which thread runs
// Py_FinalizeEx; whether the GC collects, and on which thread), and the GIL waits that happen
// while their runtime finalizes.
#pragma once

#include "commands/analysis/report.h"
#include "symbols/native/native_stacks.h"
#include "symbols/target.h"

namespace pytstates {

// After the waits are read (threads[].blockedOn), before the findings. stacks may be null.
void readPythonState(const Target& target, NativeStacks* stacks, const ReportOptions& options, Report& report);

// After addWaitFindings: a deadlock whose cycle holds a GIL wait during finalization says so.
void markFinalizingDeadlocks(Report& report);

}  // namespace pytstates
