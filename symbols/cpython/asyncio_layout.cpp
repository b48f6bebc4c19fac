// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/asyncio_layout.h"

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/debug_session.h"
#include "symbols/text/base_name.h"

namespace pytstates {

namespace {

DwarfTypes* dwarfOf(const Target& target, const LoadedModule& mod, bool useDwarf) {
    // Answers kept per build-id (type_cache.h): a warm run reads no DWARF.
    return useDwarf ? target.dwarfTypes(mod) : nullptr;
}

// The _asyncio extension loaded for this runtime's minor ("cpython-311"); nullptr when built in.
const LoadedModule* asyncioModule(const Target& target, int minor) {
    std::string tag = "cpython-3" + std::to_string(minor);
    for (const auto& m : target.modules()) {
        std::string name = baseName(m.path);
        if (name.rfind("_asyncio.", 0) == 0 && name.find(tag) != std::string::npos) return &m;
    }
    return nullptr;
}

struct TableRow {
    int minor;
    int64_t futState, taskFutWaiter, taskCoro, taskName, tstateDict, funcClosure, funcName;
    int64_t runningLoop;  // 3.14+: _PyThreadStateImpl.asyncio_running_loop (asyncio_running_task follows it)
};
// CPython with the GIL on LP64, measured with each release's DWARF: Debian 12's python3.11-dbg
// (3.11.2), pyenv's builds (3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0) and Debian unstable's
// python3.14-dbg and python3.15-dbg (scripts/debian-python). fut_loop, fut_callback0 and
// fut_callbacks are at 16, 24 and 40 in all of them; rl_loop at 16 (<= 3.11).
const TableRow kTable[] = {
    {9, 80, 144, 152, 160, 152, 48, 64, -1},
    {10, 88, 152, 160, 168, 152, 72, 32, -1},
    {11, 88, 128, 136, 144, 128, 72, 32, -1},
    {12, 88, 128, 136, 144, 112, 72, 32, -1},
    {13, 96, 112, 120, 128, 128, 72, 32, -1},
    {14, 104, 120, 128, 136, 128, 72, 32, 864},
    {15, 104, 120, 128, 136, 152, 72, 32, 1024},
};

bool table(int minor, AsyncioLayout* l) {
    for (const auto& row : kTable) {
        if (row.minor != minor) continue;
        l->futLoop = 16, l->futCallback0 = 24, l->futCallbacks = 40, l->futState = row.futState;
        l->taskFutWaiter = row.taskFutWaiter, l->taskCoro = row.taskCoro, l->taskName = row.taskName;
        l->tstateDict = row.tstateDict, l->holderLoop = minor <= 11 ? 16 : -1;
        l->funcClosure = row.funcClosure, l->funcName = row.funcName;
        l->tstateRunningLoop = row.runningLoop, l->tstateRunningTask = row.runningLoop >= 0 ? row.runningLoop + 8 : -1;
        if (minor >= 14) {
            // FutureObj_HEAD: ... fut_cancelled_exc, fut_awaited_by, fut_state, fut_is_task, fut_awaited_by_is_set
            l->futAwaitedBy = row.futState - 8;
            l->futAwaitedByIsSet = row.futState + 5;
        }
        return true;
    }
    return false;
}

}  // namespace

bool asyncioLoaded(const Target& target, const Runtime& runtime) {
    if (asyncioModule(target, runtime.layout.minor)) return true;
    const auto& modules = target.modules();
    if (runtime.moduleIndex >= modules.size() || !modules[runtime.moduleIndex].elf) return false;
    auto init = modules[runtime.moduleIndex].elf->findSymbol("PyInit__asyncio");
    return init && init->defined;
}

AsyncioLayout asyncioLayout(const Target& target, const Runtime& runtime, bool useDwarf) {
    AsyncioLayout l;
    const CPythonLayout& cl = runtime.layout;
    if (cl.freeThreaded || !table(cl.minor, &l)) {
        l.source = "asyncio's structures are read on CPython 3.9 to 3.15 with the GIL so far; this runtime is " + runtime.version +
                   (cl.freeThreaded ? " (free-threaded)" : "");
        return l;
    }
    l.source = "table (CPython 3." + std::to_string(cl.minor) + ", LP64)";
    // DWARF where it is had: the runtime's for the interpreter structs, _asyncio's for its own.
    std::string dwarfFiles;
    const auto& modules = target.modules();
    if (runtime.moduleIndex < modules.size())
        if (auto d = dwarfOf(target, modules[runtime.moduleIndex], useDwarf)) {
            bool any = false;
            auto set = [&](int64_t* field, const char* type, const char* member) {
                if (auto v = d->memberOffset(type, member)) *field = *v, any = true;
            };
            set(&l.tstateDict, "_ts", "dict");
            set(&l.funcClosure, "PyFunctionObject", "func_closure");
            set(&l.funcName, "PyFunctionObject", "func_name");
            if (cl.minor >= 14) {
                set(&l.tstateRunningLoop, "_PyThreadStateImpl", "asyncio_running_loop");
                set(&l.tstateRunningTask, "_PyThreadStateImpl", "asyncio_running_task");
            }
            if (any) dwarfFiles = d->path();
        }
    const LoadedModule* ext = asyncioModule(target, cl.minor);
    if (!ext && runtime.moduleIndex < modules.size()) ext = &modules[runtime.moduleIndex];  // built in
    if (ext)
        if (auto d = dwarfOf(target, *ext, useDwarf)) {
            auto set = [&](int64_t* field, const char* type, const char* member) {
                if (auto v = d->memberOffset(type, member)) *field = *v;
            };
            if (d->hasType("TaskObj")) {
                set(&l.futLoop, "FutureObj", "fut_loop");
                set(&l.futCallback0, "FutureObj", "fut_callback0");
                set(&l.futCallbacks, "FutureObj", "fut_callbacks");
                set(&l.futState, "FutureObj", "fut_state");
                if (cl.minor >= 14) {
                    set(&l.futAwaitedBy, "FutureObj", "fut_awaited_by");
                    set(&l.futAwaitedByIsSet, "FutureObj", "fut_awaited_by_is_set");
                }
                set(&l.taskFutWaiter, "TaskObj", "task_fut_waiter");
                set(&l.taskCoro, "TaskObj", "task_coro");
                set(&l.taskName, "TaskObj", "task_name");
                if (cl.minor <= 11) set(&l.holderLoop, "PyRunningLoopHolder", "rl_loop");
                if (dwarfFiles != d->path()) dwarfFiles += (dwarfFiles.empty() ? "" : ", ") + d->path();
            }
        }
    if (!dwarfFiles.empty()) l.source = "DWARF of " + dwarfFiles + ", else " + l.source;
    l.known = true;
    return l;
}

}  // namespace pytstates
