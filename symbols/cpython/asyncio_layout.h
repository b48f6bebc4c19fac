// SPDX-License-Identifier: Apache-2.0
// Where asyncio keeps what --tasks reads: the _asyncio module's FutureObj/TaskObj, the running-loop
// holder, and the few interpreter structs a suspended coroutine is read through (its embedded frame,
// the frame's value stack, a thread state's dict, a heap type's cached keys). None of these are in
// CPythonLayout (thread states and frames only); filled from DWARF (the _asyncio module's and the
// runtime's), else from a table measured on one build.
#pragma once

#include <cstdint>
#include <string>

#include "symbols/cpython/runtimes.h"
#include "symbols/target.h"

namespace pytstates {

struct AsyncioLayout {
    bool known = false;   // every field below is set: tasks can be read
    std::string source;   // "DWARF of <files>" or "table (...)"; why unknown otherwise
    // FutureObj (TaskObj starts with the same fields, task_ for fut_)
    int64_t futLoop = -1, futCallback0 = -1, futCallbacks = -1, futState = -1;
    // 3.14+: FutureObj.fut_awaited_by (one future, or a set of them when fut_awaited_by_is_set),
    // where CPython records who awaits a future (Modules/_asynciomodule.c, future_awaited_by_add);
    // -1 before 3.14, where the edges are derived from the objects (asyncio_tasks.cpp)
    int64_t futAwaitedBy = -1, futAwaitedByIsSet = -1;
    // TaskObj
    int64_t taskFutWaiter = -1, taskCoro = -1, taskName = -1;
    int64_t tstateDict = -1;          // PyThreadState.dict (<= 3.13: the running loop's home)
    // 3.14+: _PyThreadStateImpl.asyncio_running_loop / asyncio_running_task (the dict no longer holds the loop)
    int64_t tstateRunningLoop = -1, tstateRunningTask = -1;
    int64_t holderLoop = -1;          // PyRunningLoopHolder.rl_loop (<= 3.11); -1 when the dict holds the loop
    int64_t funcClosure = -1;         // PyFunctionObject.func_closure
    int64_t funcName = -1;            // PyFunctionObject.func_name
    // fut_state's values (the same from 3.8 to 3.15)
    int statePending = 0, stateCancelled = 1, stateFinished = 2;
};

// asyncio's C module is in the process for this runtime: its _asyncio extension is loaded, or the
// runtime's module has it built in (PyInit__asyncio). Without it no _asyncio.Task exists to be read.
bool asyncioLoaded(const Target& target, const Runtime& runtime);

// The layout for `runtime`'s CPython; known == false with `source` saying why (versions not read yet).
AsyncioLayout asyncioLayout(const Target& target, const Runtime& runtime, bool useDwarf);

}  // namespace pytstates
