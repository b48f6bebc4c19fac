// SPDX-License-Identifier: Apache-2.0
// What Python itself says about its threads and interpreters: each thread's name (Thread.name,
// else the kernel's), each interpreter's state (running or finalizing, and which thread runs
// Py_FinalizeEx; whether the GC collects, and on which thread), and the GIL waits that happen
// while their runtime finalizes.
#pragma once

#include <memory>
#include <vector>

#include "commands/analysis/report.h"
#include "symbols/cpython/interpreter_state.h"
#include "symbols/native/native_stacks.h"
#include "symbols/target.h"

namespace pytstates {

// interpreterStateLayout() of each candidate runtime, asked while preparing (Preparation). The
// layout depends on the runtime's module and version alone: a walked runtime takes the one of its
// module, version and build, else it is looked up then.
struct InterpreterStateLayouts {
    struct Entry {
        size_t moduleIndex = 0;
        int minor = 0;
        bool freeThreaded = false;
        InterpreterStateLayout layout;
    };
    std::vector<Entry> entries;
    const InterpreterStateLayout* find(const Runtime& runtime) const;
};
std::shared_ptr<const InterpreterStateLayouts> prepareInterpreterStateLayouts(const Target& target, const RuntimeCandidates& runtimes,
                                                                              bool useDwarf);

// After the waits are read (threads[].blockedOn), before the findings. stacks and prepared may be null.
void readPythonState(const Target& target, NativeStacks* stacks, const ReportOptions& options, const InterpreterStateLayouts* prepared,
                     Report& report);

// After addWaitFindings: a deadlock whose cycle holds a GIL wait during finalization says so.
void markFinalizingDeadlocks(Report& report);

}  // namespace pytstates
