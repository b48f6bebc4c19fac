// SPDX-License-Identifier: Apache-2.0
// One stop of a debugger's target, analysed once (check's analysis with every thread state's
// whole Python stack), and the facts the debugger commands ask of it: a thread's Python stack
// with the eval-loop frame that runs each frame, a frame's locals and names, what a thread-state
// pointer is, which thread runs a thread state, a Python thread or an asyncio task. Facts only:
// commands/render/render_view words them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands/analysis/report.h"
#include "symbols/cpython/tstate_memory.h"
#include "symbols/target.h"

namespace pytstates {

// A Python frame of a thread, as the view numbers it.
struct ViewFrame {
    PyFrame frame;
    size_t index = 0;      // innermost 0, over every thread state the thread runs
    size_t evalGroup = 0;  // run by the evalGroup-th eval-loop C frame of the thread (innermost 0)
    uint64_t tstate = 0;   // the thread state whose stack holds it
};

// How a thread stands towards its GIL.
// Crashed: the thread faulted entering a wait (`blocked`), so it waits for nothing.
enum class GilStand { Unknown, Holds, WaitsForGil, WaitsOther, Running, NoGil, Crashed };

// A thread's Python stack: the thread states it runs (innermost first) and their frames.
struct ThreadStack {
    int lwp = 0;
    uint64_t tstate = 0;  // the one it runs now (innermost)
    std::vector<uint64_t> tstates;
    const Runtime* runtime = nullptr;
    const Interpreter* interp = nullptr;
    const ThreadRow* row = nullptr;
    std::optional<std::string> name;  // Thread.name (Python's), when it has one
    GilStand gil = GilStand::Unknown;
    std::optional<BlockedOn> blocked;  // WaitsForGil, WaitsOther
    std::vector<ViewFrame> frames;
    size_t evalGroups = 0;  // how many eval-loop C frames the frames need
};

// One local of a frame, read when asked.
struct ViewLocal {
    std::string name, kind;  // kind: arg, local, cell, free
    uint64_t address = 0;
    std::string type;
    std::string repr;  // bounded
};

// A name looked up as Python does from a frame: local, then global, then builtin.
struct ViewName {
    std::string scope;  // "local", "global", "builtin"; "": not found
    ViewLocal value;
};

// Every per-thread cache that names a thread state (CPython's current, PyGILState's slot, a
// pybind11 record's key), as findings name their sources.
struct TstateFacts {
    uint64_t address = 0;
    bool listed = false;
    const Runtime* runtime = nullptr;
    const Interpreter* interp = nullptr;
    const ThreadState* state = nullptr;
    std::optional<TstatePlace> place;
    bool holdsGil = false;
    std::vector<FindingSource> caches;
    std::vector<const Finding*> findings;
    std::optional<TstateMemory> memory;  // not listed: what its memory reads as now
    std::vector<ViewFrame> frames;
};

// What find-thread matched, and the thread that answers it.
struct FoundThread {
    std::optional<int> lwp;
    std::string matched;  // "thread state", "thread name", "asyncio task"
    uint64_t address = 0; // the thread state or task
    std::string name;     // the thread's or task's name
    std::string why;      // none found: why (one line)
};

struct ObjectFacts {
    bool readable = false;
    std::string type;
    std::string repr;
};

class DebuggerView {
public:
    // Reads the target once; throws std::runtime_error (one line) when it holds no CPython.
    DebuggerView(const Target& target, bool useDwarf);
    ~DebuggerView();

    const Report& report() const { return report_; }
    const Target& target() const { return target_; }

    // The thread's Python stack; nullopt (and *why) when the LWP is unknown or runs no Python.
    std::optional<ThreadStack> stack(int lwp, std::string* why) const;
    // The thread's whole native stack with the Python frames its eval-loop frames run (unwound once).
    const NativeStack& nativeStack(int lwp);
    std::vector<ViewLocal> locals(const ViewFrame& frame) const;
    ViewName lookup(const ViewFrame& frame, const std::string& name) const;
    TstateFacts tstate(uint64_t address) const;
    FoundThread findThread(const std::string& target) const;
    ObjectFacts object(uint64_t address) const;
    // The runtime a thread state or interpreter address belongs to (the first one otherwise).
    const Runtime* runtimeOfInterpreter(uint64_t interp) const;
    const Interpreter* interpreterAt(uint64_t address) const;

private:
    const Target& target_;
    Preparation preparation_;
    Report report_;
    std::map<int, NativeStack> native_;
};

// The source lines first..last (1-based) of a file the target names, read from the sysroot
// first, else the path itself; empty when unreadable.
std::vector<std::string> sourceLines(const std::string& sysroot, const std::string& file, int first, int last);

}  // namespace pytstates
