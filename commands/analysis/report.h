// SPDX-License-Identifier: Apache-2.0
// The one report model every front end renders: what the target holds, per runtime,
// interpreter, thread state and OS thread. Built from symbols/, rendered as text or JSON.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "commands/analysis/finding_codes.h"
#include "commands/analysis/finding_facts.h"
#include "commands/history/history_log.h"
#include "commands/analysis/tasks_model.h"
#include "symbols/cpython/asyncio_tasks.h"
#include "symbols/cpython/runtimes.h"
#include "symbols/cpython/tstate_memory.h"
#include "symbols/glibc/pthread_keys.h"
#include "symbols/greenlet/greenlets.h"
#include "symbols/nanobind/nb_internals.h"
#include "symbols/native/native_stacks.h"
#include "symbols/native/wait_functions.h"
#include "symbols/text/hex_address.h"
#include "symbols/pybind11/internals_reader.h"
#include "symbols/target.h"

namespace pytstates {

// Where one module's file was read from.
struct ModuleFile {
    std::string module;     // the path the target names
    std::string file;       // the file read; empty when none fits
    std::string via;        // "map_files", "root", "sysroot", "path", "debuginfod"
    bool deleted = false;   // deleted or replaced on disk since the process mapped it
    std::string buildId;    // from the target's memory
    std::string debugFile;  // the separate debug file, when one is used
    std::string problem;
};

struct TargetSummary {
    TargetKind kind = TargetKind::Core;
    std::string arch = "x86_64";
    int pid = 0;
    std::vector<int> namespacePids;  // live: the pid in each PID namespace, ours first
    std::string root = "/";          // live: the process's root directory as we see it
    std::string sysroot;             // --sysroot
    std::string executable;
    std::optional<double> stoppedMs;
    // live, stopped: what was read from the process after it ran again (parts and page reads)
    std::optional<std::vector<Target::PartRead>> readAfterResume;
    std::vector<ModuleFile> files;
    std::optional<ProcessFacts> process;  // a core's NT_PRPSINFO
};

// One pybind11 internals record with the value its TLS key holds on each thread.
struct InternalsView {
    InternalsRecord record;
    size_t runtimeIndex = 0;
    struct Value {
        int lwp = 0;
        uint64_t tstate = 0;
        std::string status;  // "set", "stale (slot of a deleted key)", ...
    };
    std::vector<Value> values;  // threads whose slot is set (or stale)
};

// What a thread waits for (commands/analysis/waits): from its native stack and the lock's memory.
struct BlockedOn {
    WaitKind kind = WaitKind::None;
    uint64_t object = 0;            // the mutex, rwlock, joined struct pthread, Python lock object, attached thread state; 0: none
    std::optional<int> heldBy;      // the owner's LWP; none when unknown or nobody
    std::string function;           // the frame that says the kind (take_gil, pthread_mutex_lock, ...)
    std::optional<size_t> frame;    // its index in the thread's native stack
    std::string call;               // kind syscall: the call ("read", "poll", "clock_nanosleep"); kind
                                    // stop-the-world: the CPython function that asked for the stop
    bool makingThreadState = false; // stop-the-world asked for inside new_threadstate (3.13t's first new state)
    std::string layoutSource;       // where the owner's field was read from (DWARF, table)
    std::string note;               // what is known about the owner when it is not an LWP
    bool ownerReadLate = false;     // the owner's field came from the running process, after the stop
    NativeFrame at;                 // the caller that waits: the first frame outside the lock's code
    std::optional<PyFrame> pythonAt;  // the Python frame that waits, for a thread running Python
    // kind gil: its interpreter (or runtime) is finalizing, so the wait never ends as a wait for
    // the GIL does (commands/analysis/python_state)
    bool duringFinalization = false;
    // kind gil: the interpreter's GIL was read and nobody holds it (a thread entering take_gil
    // would take it, not wait); false when it is held or its state is unknown.
    bool gilFree = false;
    uint64_t gilHolder = 0;  // kind gil: the thread state holding it, when read (heldBy: the thread running it)
    // Python's own waits (commands/analysis/python_waits): what the Python frames say is waited on.
    std::string pythonKind;           // condition, event, queue, semaphore, join; "": the lock itself (python-lock)
    uint64_t pythonObject = 0;        // the Condition, Event, Queue, Semaphore or Thread waited on; 0: none
    std::string pythonName;           // how the nearest frame outside threading/queue/asyncio names it
    std::string holderEvidence;       // owner-field | with-block | none; "": not a lock's wait
    std::optional<PyFrame> holderAt;  // with-block: the holder's frame that executes the body
    int holderWithLine = -1;          // with-block: the `with` statement's line; -1 unknown
    uint64_t holderObject = 0;        // with-block: what the with-block holds (the lock, or its Condition)
    std::string holderName;           // with-block: how the holder's frame names what it holds (`first`)
    bool objectFromFrame = false;     // `object` from the Python frame's `with` being entered, not the native frame
};

struct ThreadRow {
    int lwp = 0;
    int namespaceLwp = 0;        // its id in the process's own PID namespace, 0 when it has none
    uint64_t pthread = 0;
    uint64_t currentTstate = 0;  // CPython's current tstate for this thread, 0 when none
    std::string currentSource;   // "gilstate.tstate_current" or "_Py_tss_tstate"
    std::string currentStatus;   // e.g. "not allocated for this thread"; empty when read
    uint64_t autotssTstate = 0;  // the autoTSSkey slot, 0 when unset
    std::string autotssStatus;   // "set", "unset", "stale ..." or empty when unknown
    std::optional<uint32_t> autotssKey;  // its pthread key (<= 3.14)
    bool autotssThreadLocal = false;     // 3.15+: the C thread-local _Py_tss_gilstate instead
    size_t autotssRuntime = 0;   // which runtime's key
    int debuggerThread = 0;      // the debugger's own thread number, 0 when none
    // Its native stack: the innermost frame (with the calls inlined at its pc), or the whole
    // stack with --native (Python frames merged in).
    std::vector<NativeFrame> nativeFrames;
    std::string nativeEnd;       // why the stack ends early, when it does
    std::optional<BlockedOn> blockedOn;  // unset when the waits were not analysed (--no-waits)
    // Its name (commands/analysis/python_state): Python's Thread.name where a threading.Thread runs on it,
    // else the kernel's (comm); none: nothing names it (a core keeps only the main thread's comm).
    std::optional<std::string> name;
    std::string nameSource;  // "threading" or "kernel"
    // Its name is threading._main_thread's: the thread threading was first imported on, which
    // is not always the process's first thread (an embedder's worker).
    bool threadingMain = false;
};

// One thread of a deadlock's cycle, as the finding tells it.
struct CycleStep {
    int lwp = 0;
    WaitKind waitsFor = WaitKind::None;
    uint64_t object = 0;
    std::optional<int> heldBy;
    NativeFrame at;                   // where it waits
    std::optional<PyFrame> pythonAt;
    std::string call;                 // BlockedOn::call
    bool ownerReadLate = false;       // BlockedOn::ownerReadLate
    bool holdsGil = false;            // it holds its interpreter's GIL
    // Python's own waits: BlockedOn's fields of the same names
    std::string pythonKind;
    uint64_t pythonObject = 0;
    std::string pythonName;
    std::string holderEvidence;
    std::optional<PyFrame> holderAt;
    int holderWithLine = -1;
    std::string holderName;
};

// Which OS thread runs a listed thread state now, on what evidence, and which thread made it.
// The maker (thread_id, native_thread_id) is no evidence of running: handed between threads
// (uWSGI swaps states made on its main thread into its worker threads), a state runs where its
// frames are.
struct TstatePlace {
    std::optional<int> lwp;       // the thread that runs it; none: parked (made, running nowhere)
    std::string evidence;         // how lwp was found: see tstateRunnerEvidenceWords()
    uint64_t depth = 0;           // where on that thread's stack the evidence lies: 0 innermost
    std::optional<int> madeBy;    // the thread that made it (thread_id / native_thread_id), when it exists
    bool madeBeforeFork = false;  // thread_id names a thread of this process, native_thread_id no thread of it
    bool runnerUnknown = false;   // it runs (the GIL holder's state), on a thread no evidence names: not parked
};

// What an analysis found, as facts: its message and its sources' lines are worded from them by
// commands/render/finding_words (findingMessage, findingSourceLines).
struct Finding {
    FindingCode code = FindingCode::StaleTstate;  // its severity and name: findingInfo(code)
    std::optional<int> lwp;
    uint64_t tstate = 0;
    std::vector<FindingSource> sources;  // every per-thread pointer, record or piece of evidence that names what it is about
    // The facts each code's words need, set by the codes that use them:
    std::optional<TstateMemory> memory;  // stale-tstate, invalid-gil-holder: what the memory at `tstate` (in no list) shows
    RunsPython running = RunsPython::No; // tls-mismatch, gilstate-other-interpreter: how `lwp` runs Python
    int64_t interpId = 0;                // the interpreter of `tstate` (foreign, tls-mismatch, gilstate-other-interpreter,
                                         // orphan) or of the GIL (invalid-gil-holder)
    int64_t currentInterpId = 0;         // gilstate-other-interpreter: the interpreter of the thread's current state
    std::optional<int> runner;           // foreign-tstate, greenlet-frame-on-thread: the thread that runs `tstate`
    std::string evidence;                // foreign-tstate: how `runner` was found (TstatePlace::evidence)
    std::optional<uint64_t> tstateId;    // orphan-tstate: PyThreadState.id
    uint64_t pthread = 0;                // orphan-tstate: the thread it belongs to (thread_id); 0: none
    std::optional<GreenletFacts> greenlet;  // greenlet-*
    uint64_t interp = 0;                 // internals-split: the interpreter holding the records
    std::vector<RecordFacts> records;    // internals-split, internals-istate-mismatch
    std::vector<RuntimeFacts> runtimes;  // multiple-runtimes
    std::optional<BlockedOn> blocked;    // gil-held-while-blocked, stop-the-world-blocked: what `lwp` is blocked in
    std::string stopFor;                 // stop-the-world-blocked: what the first stopper stops the world for
    std::vector<CycleStep> cycle;      // deadlock: every thread of the cycle, from `lwp` round
    std::string function;              // gil-held-while-blocked, stop-the-world-blocked: the call the thread is blocked in
    std::vector<int> waiters;          // the threads waiting for it: for the GIL, or stopping the world
    // From a recorded history (py-tstates-record, --history): the events of `tstate`'s last life,
    // each with the TLS slot it was cached in (cached events), and those events in words.
    struct HistoryEntry {
        HistoryEvent event;
        std::string source;  // "pybind11 key 2 (__pybind11_internals_v4_...)"; empty when not cached
    };
    std::vector<HistoryEntry> history;
    std::vector<std::string> historyWords;  // one or two lines
    // deadlock: a thread of the cycle waits for the GIL while its runtime finalizes (the thread
    // running Py_FinalizeEx, when known, and the version whose take_gil decides its fate)
    bool finalizingGilWait = false;
    std::optional<int> finalizingLwp;
    int finalizingMinor = 0;
    // asyncio: deadlock through tasks (taskCycle instead of cycle); event-loop-blocked:
    // `lwp` runs `loop` and is blocked (`blocked`, `function`) inside `task` (0: a callback, no task)
    // at taskFrame, while readyCallbacks wait in its ready queue and its timers are scheduled or due.
    std::vector<TaskCycleStep> taskCycle;
    uint64_t task = 0, loop = 0;
    std::string taskName;
    std::optional<PyFrame> taskFrame;
    std::optional<size_t> readyCallbacks;  // none: the ready queue was not read
    std::optional<LoopTimers> timers;      // none: the timers were not read
};

// The interpreter's own state, as pystack shows it (commands/analysis/python_state).
struct InterpreterStateView {
    std::optional<bool> finalizing;      // none: unknown
    uint64_t finalizingTstate = 0;       // the state that runs Py_FinalizeEx / Py_EndInterpreter
    bool finalizingRuntime = false;      // _PyRuntime's _finalizing says it (the whole runtime)
    std::optional<int> finalizingLwp;    // the thread that finalizes it
    std::string finalizingEvidence;      // "thread state" (it runs the finalizing state) or "native stack" (Py_FinalizeEx)
    std::optional<bool> gcCollecting;    // none: unknown
    std::optional<int> gcLwp;            // the thread whose native stack runs the collection
    std::string layoutSource;            // where the fields' offsets came from
};

// Why the process called abort() (commands/analysis/abort_context).
struct AbortInfo {
    std::string kind;        // uncaught-exception | assert | abort-message | fatal-error
    std::string type;        // uncaught-exception: the C++ type
    std::string pythonType;  // pybind11::error_already_set: the Python exception's class
    std::string message;     // what(), the assertion, glibc's or CPython's message; empty when unknown
    std::string note;        // what could not be read
};

// What a core's process died of, and which finding explains it.
struct CrashReport {
    CrashSignal signal;
    NativeStack stack;                // the crashing thread's native stack, innermost first
    std::vector<size_t> explainedBy;  // indexes into Report::findings
    // What ties the crash to explainedBy's findings (worded by commands/render/finding_words:
    // crashExplanationWords): the frame at stack.frames[frame] holds a finding's pointer (`value`),
    // or, an abort, the thread-state check there failed (no value). Unset: nothing ties them.
    struct Tie {
        size_t frame = 0;
        std::optional<FrameValue> value;
    };
    std::optional<Tie> tie;
    std::string fatalError;           // "Fatal Python error: ..." when CPython aborted with one
    std::optional<AbortInfo> abort;   // a SIGABRT from abort(): why
    // The wait the crashing thread's stack shows it entering (take_gil, a mutex): it faulted or
    // aborted there, so it waits for nothing; told in the crash, never as a hang.
    std::optional<BlockedOn> entering;
};

struct Report {
    TargetSummary target;
    std::vector<Runtime> runtimes;
    std::vector<std::string> rejectedRuntimes;
    // A core of a process that runs no CPython at all (no module looks like it): why, said as a
    // line of the report, which still gives the crash, the threads and their native stacks.
    std::string noRuntime;
    std::vector<ThreadRow> threads;
    std::vector<InternalsView> internals;
    std::vector<ModuleLocalRecord> moduleLocals;  // pybind11 3.x module-local records (not internals)
    std::vector<NanobindRecord> nanobind;         // nanobind's internals records
    bool internalsRead = false;
    std::vector<Finding> findings;
    std::vector<std::string> warnings;
    std::optional<CrashReport> crash;
    std::vector<GreenletScan> greenlets;  // per runtime with greenlet loaded
    bool nativeStacks = false;            // --native: every thread's whole stack
    bool waitsRead = false;               // threads[].blockedOn filled (not --no-waits)
    std::vector<std::string> waitNotes;   // what the wait analysis could not know (no GIL, no layout)
    std::map<uint64_t, TstatePlace> places;  // every listed tstate: who runs it, who made it
    std::set<uint64_t> listedTstates;        // every tstate in some interpreter's list
    std::map<uint64_t, InterpreterStateView> interpreterStates;  // by interpreter address
    // asyncio: every event loop and task, per runtime whose process has asyncio's C module (tstates
    // and check; --tasks only shows them).
    bool tasksRead = false;
    std::vector<AsyncioScan> asyncio;

    bool listed(uint64_t tstate) const { return listedTstates.count(tstate) != 0; }

    // The OS thread that runs the thread state now; none when it is parked or not listed.
    std::optional<int> lwpFor(uint64_t tstate) const {
        auto it = places.find(tstate);
        if (it == places.end()) return std::nullopt;
        return it->second.lwp;
    }
    // The OS thread holding the interpreter's GIL: the one running its holder; none when the
    // GIL is free or its holder's thread unknown.
    std::optional<int> gilHolderLwp(const Interpreter& interp) const {
        if (!interp.gilKnown || !interp.gilHolder) return std::nullopt;
        return lwpFor(interp.gilHolder);
    }
    // The OS thread that made it, when that thread still exists.
    std::optional<int> makerFor(uint64_t tstate) const {
        auto it = places.find(tstate);
        if (it == places.end()) return std::nullopt;
        return it->second.madeBy;
    }
    // The thread states running on a thread, innermost first (the one it runs now first).
    std::vector<uint64_t> tstatesOn(int lwp) const {
        std::vector<std::pair<uint64_t, uint64_t>> found;  // (depth, tstate)
        for (const auto& [tstate, place] : places)
            if (place.lwp == lwp) found.emplace_back(place.depth, tstate);
        std::sort(found.begin(), found.end());
        std::vector<uint64_t> out;
        out.reserve(found.size());
        for (const auto& f : found) out.push_back(f.second);
        return out;
    }
    // tstatesOn for every thread at once (one pass over `places`, not one per thread).
    std::map<int, std::vector<uint64_t>> tstatesByLwp() const {
        std::map<int, std::vector<std::pair<uint64_t, uint64_t>>> found;  // lwp -> (depth, tstate)
        for (const auto& [tstate, place] : places)
            if (place.lwp) found[*place.lwp].emplace_back(place.depth, tstate);
        std::map<int, std::vector<uint64_t>> out;
        for (auto& [lwp, runs] : found) {
            std::sort(runs.begin(), runs.end());
            auto& list = out[lwp];
            list.reserve(runs.size());
            for (const auto& r : runs) list.push_back(r.second);
        }
        return out;
    }
    const GreenletScan* greenletScanOf(const Runtime& rt) const {
        for (const auto& scan : greenlets)
            if (scan.runtimeIndex < runtimes.size() && &runtimes[scan.runtimeIndex] == &rt) return &scan;
        return nullptr;
    }
    // The greenlets shown under no thread state: their thread has ended, is unknown, or has no
    // thread state in the greenlet's interpreter.
    std::vector<const GreenletInfo*> greenletsWithoutTstate(const GreenletScan& scan) const {
        std::set<std::pair<uint64_t, int>> placed;  // (interpreter, LWP) of every thread state
        for (const auto& rt : runtimes)
            for (const auto& interp : rt.interpreters)
                for (const auto& ts : interp.tstates)
                    if (auto lwp = lwpFor(ts.address)) placed.emplace(interp.address, *lwp);
        std::vector<const GreenletInfo*> out;
        for (const auto& g : scan.greenlets)
            if (!g.lwp || !placed.count({g.interp, g.lwp})) out.push_back(&g);
        return out;
    }
    bool hasError() const {
        for (const auto& f : findings)
            if (findingSeverity(f.code) == Severity::Error) return true;
        return false;
    }
};

// What to read and analyse. No display option belongs here (commands/run.cpp keeps those in
// RenderOptions): every finding, the exit status and every JSON fact come from the whole data.
// The reading options below choose what is read, at what cost (--native, --locals, --no-dwarf,
// --no-waits), never how much of it is shown.
struct ReportOptions {
    bool internals = false;  // read pybind11 internals records
    bool types = false;      // and their registered types
    bool findings = false;   // run the checks
    bool useDwarf = true;    // false: _Py_DebugOffsets and built-in tables only
    bool native = false;     // every thread's whole native stack, Python frames merged in
    bool greenlets = true;   // find the greenlets (walks every object the collector tracks)
    bool waits = true;       // what each thread waits for, the wait-for graph (--no-waits: off)
    bool asyncio = true;     // every asyncio event loop and task, and their findings (tstates and check)
    bool locals = false;     // --locals: each Python frame's arguments and locals (commands/analysis/frame_locals)
    // Called once what must be one moment's has been read (threads, registers, stacks, thread
    // states and their frames, per-thread pointers): a live target resumes the process here.
    std::function<void()> afterConsistentReads;
};

struct InterpreterStateLayouts;  // commands/analysis/python_state.h

// What can be worked out from files alone (runtime layouts, pybind11 modules): done before a
// live target is stopped, so the stop covers only the memory reads.
struct Preparation {
    RuntimeCandidates runtimes;
    // Each candidate runtime's interpreter-state fields: without the answer cache a DWARF lookup
    // decompresses units of the debug file (6 MiB on python3.11), which adds to the peak memory
    // unless done before the report's data is held (issue 41: 32 MiB at 1,000 threads).
    std::shared_ptr<const InterpreterStateLayouts> interpreterStateLayouts;
    Pybind11ModuleScan pybind11;
    std::shared_ptr<NativeStacks> native;  // modules reported to the unwinder
    std::vector<GreenletModule> greenletModules;
    std::vector<GlibcKeys> glibc;
};
Preparation prepareReport(const Target& target, const ReportOptions& options);

// Throws std::runtime_error (one line) when the target holds no CPython runtime.
Report buildReport(const Target& target, const ReportOptions& options, const Preparation& preparation);
Report buildReport(const Target& target, const ReportOptions& options);

// PyThreadState.state (3.13+): "detached", "attached", "suspended" (a stop-the-world pause).
std::string threadStateWords(int state);

}  // namespace pytstates
