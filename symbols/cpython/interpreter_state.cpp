// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/interpreter_state.h"

#include <set>

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/debug_session.h"

namespace pytstates {

namespace {

struct StateRow {
    int minor;
    bool freeThreaded;
    int64_t runtimeFinalizing, interpFinalizing, gcCollecting;
    bool gcInRuntime;
    const char* measuredOn;
};

// Measured with gdb (`&((T*)0)->field`) on each build's DWARF, x86_64 and LP64 alike: pyenv's
// 3.8.18-3.13.0, Debian's 3.11 (python3.11-dbg), Debian unstable's 3.14 and 3.15 (their -dbg
// packages), and scripts/python-freethreaded's 3.13t, whose offsets here equal 3.13's.
const StateRow kRows[] = {
    {8, false, 16, -1, 544, true, "3.8.18"},
    {9, false, 16, -1, 816, false, "3.9.18"},
    {10, false, 16, -1, 816, false, "3.10.13"},
    {11, false, 24, -1, 848, false, "3.11.7 and Debian's 3.11"},
    {12, false, 24, 104, 312, false, "3.12.1"},
    {13, false, 608, 7384, 7600, false, "3.13.0"},
    {13, true, 608, 7384, 7600, false, "3.13t (scripts/python-freethreaded)"},
    {14, false, 784, 7392, 7600, false, "Debian's 3.14"},
    {15, false, 912, 7384, 7512, false, "Debian's 3.15"},
};

}  // namespace

InterpreterStateLayout interpreterStateLayout(const Target& target, const Runtime& runtime, bool useDwarf) {
    InterpreterStateLayout layout;
    const auto& modules = target.modules();
    if (useDwarf && runtime.moduleIndex < modules.size()) {
        const LoadedModule& mod = modules[runtime.moduleIndex];
        if (mod.debugElf && mod.debugElf->hasDebugInfo())
            // Through the per-build-id cache (type_cache.h): a cached build reads no DWARF here.
            if (DwarfTypes* types = target.dwarfTypes(mod)) {
                auto fin = types->memberOffset("_PyRuntimeState", "_finalizing");
                if (!fin) fin = types->memberOffset("_PyRuntimeState", "finalizing");
                if (fin) {
                    layout.runtimeFinalizing = *fin;
                    if (runtime.layout.minor >= 12)
                        if (auto i = types->memberOffset("_is", "_finalizing")) layout.interpFinalizing = *i;
                    if (auto gc = types->memberOffset("_is", "gc.collecting")) {
                        layout.gcCollecting = *gc;
                    } else if (auto rgc = types->memberOffset("_PyRuntimeState", "gc.collecting")) {
                        layout.gcCollecting = *rgc;
                        layout.gcInRuntime = true;
                    }
                    // Not the debug file's path: where it was found (a sysroot, debuginfod) is
                    // target.files' to say; the report is the same whichever way it came.
                    layout.source = "DWARF";
                    return layout;
                }
            }
    }
    for (const auto& row : kRows) {
        if (row.minor != runtime.layout.minor || row.freeThreaded != runtime.layout.freeThreaded) continue;
        layout.runtimeFinalizing = row.runtimeFinalizing;
        layout.interpFinalizing = row.interpFinalizing;
        layout.gcCollecting = row.gcCollecting;
        layout.gcInRuntime = row.gcInRuntime;
        layout.source = std::string("table (CPython ") + row.measuredOn + ")";
        return layout;
    }
    layout.source = "no DWARF and no table for CPython 3." + std::to_string(runtime.layout.minor) +
                    (runtime.layout.freeThreaded ? " free-threaded" : "");
    return layout;
}

InterpreterRunState readInterpreterRunState(const Memory& memory, const Runtime& runtime, const Interpreter& interp,
                                            const InterpreterStateLayout& layout) {
    InterpreterRunState state;
    std::optional<uint64_t> own;
    if (layout.interpFinalizing >= 0) own = memory.readPointer(interp.address + static_cast<uint64_t>(layout.interpFinalizing));
    std::optional<uint64_t> whole;
    if (interp.main && layout.runtimeFinalizing >= 0)
        whole = memory.readPointer(runtime.address + static_cast<uint64_t>(layout.runtimeFinalizing));
    if (whole && *whole) {  // Py_FinalizeEx: the whole runtime (3.12+ marks the interpreter too)
        state.finalizing = whole;
        state.finalizingFromRuntime = true;
    } else if (own && *own) {
        state.finalizing = own;
    } else if ((layout.interpFinalizing < 0 || own) && (!interp.main || whole)) {
        // Before 3.12 a sub-interpreter records no finalizing state of its own: what its
        // runtime's says is all there is (Py_EndInterpreter is told by its native stack only).
        state.finalizing = 0;
    }
    if (layout.gcCollecting >= 0) {
        uint64_t base = layout.gcInRuntime ? runtime.address : interp.address;
        if (auto v = memory.readValue<int32_t>(base + static_cast<uint64_t>(layout.gcCollecting))) {
            if (*v == 0 || *v == 1) state.gcCollecting = *v == 1;
        }
    }
    return state;
}

bool isGcCollectFunction(const std::string& function) {
    static const std::set<std::string> names = {
        "collect", "collect_with_callback", "collect_generations", "gc_collect_main", "gc_collect_region",
        "gc_collect_full", "gc_collect_young", "gc_collect_increment", "_PyGC_Collect", "PyGC_Collect",
        "_PyGC_CollectNoFail", "gc_collect", "gc_collect_impl", "_PyGC_CollectIfEnabled"};
    std::string bare = function;
    if (auto dot = bare.find('.'); dot != std::string::npos) bare.resize(dot);  // collect.constprop.0, .isra.0
    return names.count(bare) != 0;
}

bool isFinalizeFunction(const std::string& function) {
    std::string bare = function;
    if (auto dot = bare.find('.'); dot != std::string::npos) bare.resize(dot);
    return bare == "Py_FinalizeEx" || bare == "Py_Finalize" || bare == "_Py_Finalize" || bare == "Py_EndInterpreter";
}

}  // namespace pytstates
