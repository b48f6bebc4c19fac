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
    // TaskObj
    int64_t taskFutWaiter = -1, taskCoro = -1, taskName = -1;
    // PyGenObject / PyCoroObject: the embedded interpreter frame and its state (3.11+)
    int64_t genIframe = -1, genFrameState = -1;
    // _PyInterpreterFrame: the saved stack depth (an index into localsplus) and localsplus
    int64_t frameStacktop = -1, frameLocalsplus = -1;
    int64_t codeNlocalsplus = -1;     // PyCodeObject.co_nlocalsplus
    int64_t tstateDict = -1;          // PyThreadState.dict (<= 3.11: the running-loop holder's home)
    int64_t holderLoop = -1;          // PyRunningLoopHolder.rl_loop
    int64_t heapTypeCachedKeys = -1;  // PyHeapTypeObject.ht_cached_keys (managed dicts' shared keys)
    int64_t funcClosure = -1;         // PyFunctionObject.func_closure
    int64_t funcName = -1;            // PyFunctionObject.func_name
    // Constants of the version: fut_state values and the opcode a suspended await resumes at.
    int statePending = 0, stateCancelled = 1, stateFinished = 2;
    int resumeOpcode = 151;
    int frameSuspended = -1;  // gi_frame_state of a generator suspended at a yield or await (FRAME_SUSPENDED)
    // A managed dict (3.11): values pointer and dict pointer, words before the object.
    int64_t managedValues = -32, managedDict = -24;
};

// The layout for `runtime`'s CPython; known == false with `source` saying why (versions not read yet).
AsyncioLayout asyncioLayout(const Target& target, const Runtime& runtime, bool useDwarf);

}  // namespace pytstates
