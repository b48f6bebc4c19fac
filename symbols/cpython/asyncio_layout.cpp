// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/asyncio_layout.h"

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/debug_session.h"
#include "symbols/text/base_name.h"

namespace pytstates {

namespace {

std::unique_ptr<DwarfTypes> dwarfOf(const Target& target, const LoadedModule& mod, bool useDwarf) {
    if (!useDwarf || !mod.debugElf || !mod.debugElf->hasDebugInfo()) return nullptr;
    // Answers kept per build-id (type_cache.h): a warm run reads no DWARF.
    return DwarfTypes::cached([&] { return target.debugSession(useDwarf).dwarf(mod); }, *mod.debugElf);
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

// CPython 3.11 with the GIL on x86_64 and arm64 (LP64), measured with Debian 12's python3.11-dbg
// DWARF (3.11.2) and pyenv's 3.11.7: the structs did not change within the series.
void table311(AsyncioLayout* l) {
    l->futLoop = 16, l->futCallback0 = 24, l->futCallbacks = 40, l->futState = 88;
    l->taskFutWaiter = 128, l->taskCoro = 136, l->taskName = 144;
    l->genIframe = 80, l->genFrameState = 75;
    l->frameStacktop = 64, l->frameLocalsplus = 72, l->codeNlocalsplus = 76;
    l->tstateDict = 128, l->holderLoop = 16, l->heapTypeCachedKeys = 872, l->funcClosure = 72, l->funcName = 32;
}

}  // namespace

AsyncioLayout asyncioLayout(const Target& target, const Runtime& runtime, bool useDwarf) {
    AsyncioLayout l;
    const CPythonLayout& cl = runtime.layout;
    if (cl.minor != 11 || cl.freeThreaded) {
        l.source = "asyncio's structures are read on CPython 3.11 so far; this runtime is " + runtime.version +
                   (cl.freeThreaded ? " (free-threaded)" : "");
        return l;
    }
    table311(&l);
    l.source = "table (CPython 3.11, LP64)";
    // DWARF where it is had: the runtime's for the interpreter structs, _asyncio's for its own.
    std::string dwarfFiles;
    const auto& modules = target.modules();
    if (runtime.moduleIndex < modules.size())
        if (auto d = dwarfOf(target, modules[runtime.moduleIndex], useDwarf)) {
            auto set = [&](int64_t* field, const char* type, const char* member) {
                if (auto v = d->memberOffset(type, member)) *field = *v;
            };
            set(&l.genIframe, "PyCoroObject", "cr_iframe");
            set(&l.genFrameState, "PyCoroObject", "cr_frame_state");
            set(&l.frameStacktop, "_PyInterpreterFrame", "stacktop");
            set(&l.frameLocalsplus, "_PyInterpreterFrame", "localsplus");
            set(&l.codeNlocalsplus, "PyCodeObject", "co_nlocalsplus");
            set(&l.tstateDict, "_ts", "dict");
            set(&l.heapTypeCachedKeys, "_heaptypeobject", "ht_cached_keys");
            set(&l.funcClosure, "PyFunctionObject", "func_closure");
            set(&l.funcName, "PyFunctionObject", "func_name");
            if (d->hasType("PyCoroObject")) dwarfFiles = d->path();
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
                set(&l.taskFutWaiter, "TaskObj", "task_fut_waiter");
                set(&l.taskCoro, "TaskObj", "task_coro");
                set(&l.taskName, "TaskObj", "task_name");
                set(&l.holderLoop, "PyRunningLoopHolder", "rl_loop");
                if (dwarfFiles != d->path()) dwarfFiles += (dwarfFiles.empty() ? "" : ", ") + d->path();
            }
        }
    if (!dwarfFiles.empty()) l.source = "DWARF of " + dwarfFiles + ", else " + l.source;
    l.known = true;
    return l;
}

}  // namespace pytstates
