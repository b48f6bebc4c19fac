// SPDX-License-Identifier: Apache-2.0
// The interpreter's own state, as pystack shows it: whether its runtime (or, 3.12+, the
// interpreter itself) is finalizing and with which thread state, and whether the garbage
// collector is collecting. Fields of _PyRuntimeState and PyInterpreterState that CPythonLayout
// does not hold, read from DWARF first, else a table measured on each build.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "symbols/cpython/runtimes.h"
#include "symbols/target.h"

namespace pytstates {

struct InterpreterStateLayout {
    // _PyRuntimeState: `finalizing` (3.8), `_finalizing` (3.9+): the thread state that runs
    // Py_FinalizeEx once it marked the runtime finalizing (an atomic pointer 3.9-3.12).
    int64_t runtimeFinalizing = -1;
    // PyInterpreterState._finalizing (3.12+): the state running Py_EndInterpreter or Py_FinalizeEx.
    int64_t interpFinalizing = -1;
    // gcstate->collecting (an int): _PyRuntime.gc (3.8), PyInterpreterState.gc (3.9+).
    int64_t gcCollecting = -1;
    bool gcInRuntime = false;
    std::string source;  // "DWARF of ..." or "table (CPython 3.N.M)"; why unknown otherwise
};

InterpreterStateLayout interpreterStateLayout(const Target& target, const Runtime& runtime, bool useDwarf);

struct InterpreterRunState {
    // The thread state that finalizes: the interpreter's own (3.12+), else the runtime's for the
    // main interpreter; 0: not finalizing; nullopt: unknown (no layout, unreadable).
    std::optional<uint64_t> finalizing;
    bool finalizingFromRuntime = false;  // read from _PyRuntime (the whole runtime finalizes)
    std::optional<bool> gcCollecting;
};

InterpreterRunState readInterpreterRunState(const Memory& memory, const Runtime& runtime, const Interpreter& interp,
                                            const InterpreterStateLayout& layout);

// Whether a native function (a symbol table's name) is one that runs a collection: 3.8-3.11
// collect/collect_with_callback, 3.12-3.13 gc_collect_main, 3.14+ gc_collect_region and its
// callers, and their entry points.
bool isGcCollectFunction(const std::string& function);
// Py_FinalizeEx, Py_Finalize, Py_EndInterpreter (and 3.12+'s _Py_Finalize).
bool isFinalizeFunction(const std::string& function);

}  // namespace pytstates
