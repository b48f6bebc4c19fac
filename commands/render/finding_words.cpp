// SPDX-License-Identifier: Apache-2.0
#include "commands/render/finding_words.h"

#include <cstdio>
#include <map>
#include <set>

#include "commands/analysis/tasks.h"
#include "commands/analysis/tstate_runners.h"
#include "symbols/pybind11/internals_id.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

std::string lwpWords(const std::optional<int>& lwp) { return lwp ? "LWP " + std::to_string(*lwp) : "no live thread"; }

std::string lwpList(const std::vector<int>& lwps) {
    std::string list;
    for (size_t i = 0; i < lwps.size(); ++i) list += (i ? ", " : "") + std::to_string(lwps[i]);
    return list;
}

// "a", "a and b", "a, b and c"
std::string namedList(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return out;
}

std::string layoutFrom(const std::string& source) {
    if (source == "dwarf") return "DWARF";
    if (source == "debug_offsets") return "_Py_DebugOffsets";
    return "the built-in layout table";
}

std::string runsWords(RunsPython running) {
    switch (running) {
        case RunsPython::HoldsGil: return "holds the GIL";
        case RunsPython::Attached: return "is attached (free-threaded, no GIL)";
        case RunsPython::No: break;
    }
    return "";
}

// The thread state a per-thread pointer names; 0 for other sources.
uint64_t namedTstate(const FindingSource& s) {
    if (const auto* p = std::get_if<source::Current>(&s)) return p->tstate;
    if (const auto* p = std::get_if<source::AutoTss>(&s)) return p->tstate;
    if (const auto* p = std::get_if<source::Pybind11Key>(&s)) return p->tstate;
    return 0;
}

std::string memoryWords(const TstateMemory& m) {
    std::string forThread = m.lwp ? " for LWP " + std::to_string(*m.lwp) : "";
    switch (m.kind) {
        case TstateMemory::Kind::Unreadable: return "its memory is not readable in the target";
        case TstateMemory::Kind::FreedTcache: {
            std::string words = "its first 16 bytes look like a glibc tcache free-list entry: it was likely freed";
            if (m.interp) words += " (the rest still reads as a thread state of interpreter " + hexAddress(m.interp) + forThread + ")";
            return words;
        }
        case TstateMemory::Kind::FreedChunk:
            return "its malloc chunk is free (the next chunk's PREV_INUSE bit is clear and its prev_size repeats this chunk's size): it was freed";
        case TstateMemory::Kind::Reset: {
            std::string words = "its memory is reset to empty (interp, prev, next and thread_id are zero)";
            if (m.inside)
                words += "; it lies inside the state of interpreter " + hexAddress(m.inside) +
                         ": that interpreter's built-in initial thread state, which CPython resets in place rather than frees when it is deleted";
            return words;
        }
        case TstateMemory::Kind::StillValid:
            return "its memory still reads as a thread state of interpreter " + hexAddress(m.interp) + forThread +
                   ", unlinked from the list, its memory not overwritten";
        case TstateMemory::Kind::Reused: break;
    }
    return m.type ? "its memory now holds a Python '" + *m.type + "' object: it was likely freed and reused"
                  : "its memory no longer reads as a thread state of any interpreter: it was likely freed and reused";
}

// The likely cause of a stale pointer, from the most telling source (a pybind11 cache, then
// PyGILState's slot, then CPython's current pointer) and what its memory shows: a built-in
// initial thread state reset in place was deleted as its interpreter's creation thread state.
std::string staleCause(const FindingSource& first, const std::optional<TstateMemory>& memory) {
    const auto* pybind11 = std::get_if<source::Pybind11Key>(&first);
    if (memory && memory->kind == TstateMemory::Kind::Reset && memory->inside)
        return pybind11 ? "the interpreter's built-in initial thread state was deleted while this record's key still names it; it is the "
                          "thread state an interpreter is created with, and pybind11 3.0.0-3.0.1's subinterpreter::create() caches it in "
                          "the record it makes there and then deletes it (Python 3.13+)"
                        : "the interpreter's built-in initial thread state was deleted while this pointer still names it";
    if (pybind11)
        // A second record in the same interpreter keeps a cache of its own; with one record, only
        // a delete outside pybind11 explains it.
        return pybind11->recordShared
                   ? "another pybind11 internals record's gil_scoped_acquire (see internals-split), or a PyGILState_Release/PyThreadState_Delete, deleted this thread state while this record's key still caches it; the next gil_scoped_acquire on this thread of a module using this record would use it again"
                   : "the thread state was deleted (PyGILState_Release, PyThreadState_Delete) while this record's key still caches it, as when pybind11's internals are first created inside a thread's gil_scoped_acquire; its next gil_scoped_acquire on this thread would use it again";
    if (std::holds_alternative<source::AutoTss>(first))
        return "the thread state was deleted without PyGILState forgetting it (PyThreadState_Delete of a PyGILState-created state, or memory corruption)";
    return "the thread state was deleted while CPython still had it current (a PyThreadState_Delete/Clear on the wrong thread, or a coroutine switch that did not restore it)";
}

std::string staleMessage(const Finding& f) {
    if (f.sources.empty()) return "";
    std::string memory = f.memory ? memoryWords(*f.memory) : "";
    if (const auto* rt = std::get_if<source::RuntimeCurrent>(&f.sources.front()))
        return "CPython " + rt->version + "'s gilstate.tstate_current names " + hexAddress(f.tstate) +
               ", which is in no interpreter's thread list; " + memory + ".";
    std::vector<std::string> named;
    for (const auto& s : f.sources) named.push_back(sourceWords(s));
    return "LWP " + std::to_string(f.lwp.value_or(0)) + ": " + namedList(named) + (named.size() == 1 ? " names " : " name ") +
           hexAddress(f.tstate) + ", which is in no interpreter's thread list; " + memory +
           ". Likely cause: " + staleCause(f.sources.front(), f.memory) + ".";
}

std::string foreignMessage(const Finding& f) {
    std::vector<std::string> named;
    for (const auto& s : f.sources)
        if (!std::holds_alternative<source::RunnerStack>(s)) named.push_back(sourceWords(s));
    return "LWP " + std::to_string(f.lwp.value_or(0)) + ": " + namedList(named) + (named.size() == 1 ? " names " : " name ") +
           hexAddress(f.tstate) + ", the thread state LWP " + std::to_string(f.runner.value_or(0)) + " runs (interpreter " +
           std::to_string(f.interpId) + "; " + runnerEvidenceWords(f.evidence) +
           "). Likely cause: a thread state handed between threads (a pool of thread states that whichever thread serves the next "
           "request takes, as mod_python's; a coroutine or fiber resumed on another thread) or a pointer cached across threads.";
}

// The threads whose slots name it, each once, in the order of the sources.
std::vector<int> sourceThreads(const Finding& f) {
    std::vector<int> lwps;
    for (const auto& s : f.sources)
        if (auto lwp = sourceLwp(s); lwp && (lwps.empty() || lwps.back() != *lwp)) lwps.push_back(*lwp);
    return lwps;
}

std::string sharedMessage(const Finding& f) {
    return "thread state " + hexAddress(f.tstate) + " is named by the TLS of LWPs " + lwpList(sourceThreads(f)) +
           ": two threads would run Python on one thread state. Likely cause: a pthread key value copied to another thread, or "
           "a pointer cached in thread-local storage across threads.";
}

std::string mismatchMessage(const Finding& f) {
    if (f.sources.size() < 2) return "";
    const FindingSource& a = f.sources[0];
    const FindingSource& b = f.sources[1];
    return "LWP " + std::to_string(f.lwp.value_or(0)) + " " + runsWords(f.running) + " but " + sourceWords(a) + " names " +
           hexAddress(namedTstate(a)) + " while " + sourceWords(b) + " names " + hexAddress(namedTstate(b)) +
           ", two thread states of interpreter " + std::to_string(f.interpId) +
           ". Likely cause: a thread-state swap (PyThreadState_Swap, a coroutine switch) that did not update every cache.";
}

std::string otherInterpreterMessage(const Finding& f) {
    if (f.sources.size() < 2) return "";
    const FindingSource& current = f.sources[0];
    const FindingSource& other = f.sources[1];
    return "LWP " + std::to_string(f.lwp.value_or(0)) + " " + runsWords(f.running) + " with thread state " +
           hexAddress(namedTstate(current)) + " of interpreter " + std::to_string(f.currentInterpId) + " while " + sourceWords(other) +
           " names " + hexAddress(namedTstate(other)) + ", a thread state of interpreter " + std::to_string(f.interpId) +
           ": PyGILState keeps one thread state per thread, and a state of another interpreter swapped in "
           "(PyEval_AcquireThread, PyThreadState_Swap) leaves it as it was. Not an error; PyGILState_Ensure on this thread "
           "now would use interpreter " + std::to_string(f.interpId) + ".";
}

std::string invalidGilHolderMessage(const Finding& f) {
    std::string gil = "interpreter " + std::to_string(f.interpId) + "'s GIL is held by ";
    if (f.memory)
        return gil + hexAddress(f.tstate) + ", which is in no thread list; " + memoryWords(*f.memory) +
               ". Likely cause: the GIL was taken with a deleted thread state (PyEval_AcquireThread/RestoreThread on a stale pointer).";
    return gil + "thread state " + hexAddress(f.tstate) +
           " which runs on no thread and whose thread no longer exists: every other thread waiting for the GIL will wait forever. "
           "Likely cause: a thread exited while holding the GIL.";
}

std::string orphanMessage(const Finding& f) {
    std::string msg = "thread state " + hexAddress(f.tstate) + " (" + (f.tstateId ? "id " + std::to_string(*f.tstateId) + ", " : "") +
                      "interpreter " + std::to_string(f.interpId) + ") ";
    if (!f.pthread) return msg + "is bound to no thread (most likely made with PyThreadState_New and not used since).";
    return msg + "belongs to pthread " + hexAddress(f.pthread) +
           ", which no longer exists: likely, the thread ended without PyGILState_Release/PyThreadState_Delete. It leaks, and a "
           "new thread whose struct pthread lands at that address could get it back through stale TLS.";
}

std::string greenletWho(const Finding& f, const GreenletFacts& g) {
    return std::string("suspended ") + (g.main ? "main " : "") + "greenlet " + hexAddress(g.address) + " (" + lwpWords(f.lwp) + ")";
}

std::string greenletBadFrameMessage(const Finding& f) {
    if (!f.greenlet) return "";
    const GreenletFacts& g = *f.greenlet;
    return greenletWho(f, g) + ": " + g.problem +
           (g.frameObject ? ". greenlet keeps it as the frame object of the frame it will resume."
                          : ". Switching back to it makes that pointer its thread state's current frame.") +
           " Likely cause: the frame was released while the greenlet still held it (a reference-count bug in C code around a "
           "switch), or memory corruption.";
}

std::string greenletFrameOnThreadMessage(const Finding& f) {
    if (!f.greenlet) return "";
    const GreenletFacts& g = *f.greenlet;
    std::string msg = greenletWho(f, g) + " will resume in frame " + hexAddress(g.savedFrame);
    if (g.function) msg += " (" + *g.function + ")";
    msg += ", which is also on the live frame stack of thread state " + hexAddress(f.tstate);
    msg += " (" + (f.runner ? "run by LWP " + std::to_string(*f.runner) : std::string("parked: run by no thread")) +
           "): one frame on two stacks. Likely cause: a switch that did not save or restore the thread "
           "state's frame pointer (C code switching stacks behind greenlet's back), or a greenlet resumed on another thread.";
    return msg;
}

std::string istateMismatchMessage(const Finding& f) {
    if (f.records.empty()) return "";
    const RecordFacts& rec = f.records.front();
    return "pybind11 internals " + rec.id.raw + " at " + hexAddress(rec.address) + " lives in the " + rec.dictName +
           " of interpreter " + hexAddress(rec.interpreter) + " but its istate is " + hexAddress(rec.istate) +
           ". Likely cause: the record was created under another interpreter (a sub-interpreter sharing builtins, or a stale "
           "record after re-initialisation).";
}

// Every record with its key and users, then what separates each pair and what would merge them:
// the same release with another compiler ABI or stdlib needs one build setting; records of
// different internals versions come from different pybind11 releases, which no compiler flag merges.
std::string splitMessage(const Finding& f) {
    const auto& records = f.records;
    std::string msg = "interpreter " + hexAddress(f.interp) + " holds " + std::to_string(records.size()) + " pybind11 internals records:";
    for (const auto& rec : records) {
        msg += " " + rec.id.raw + " (" + releasesOfInternalsVersion(rec.id.version) + ", key " +
               (rec.key ? std::to_string(*rec.key) : "?") + ", used by ";
        std::string mods;
        for (const auto& m : rec.modules) mods += (mods.empty() ? "" : ", ") + m;
        msg += (mods.empty() ? "unknown modules" : mods) + ");";
    }
    bool otherRelease = false, otherAbi = false;
    for (size_t i = 0; i < records.size(); ++i)
        for (size_t j = i + 1; j < records.size(); ++j) {
            const auto& a = records[i].id;
            const auto& b = records[j].id;
            if (a.version != b.version) {
                otherRelease = true;
                msg += " " + a.raw + " and " + b.raw + " come from different pybind11 releases (internals v" + std::to_string(a.version) +
                       " and v" + std::to_string(b.version) + ");";
            } else {
                otherAbi = true;
                msg += " " + a.raw + " and " + b.raw + " are the same pybind11 internals built differently: " + describeIdDifference(a, b) + ";";
            }
        }
    msg += " each record keeps its own thread-state cache, so their gil_scoped_acquire can delete each other's thread states. Fix:";
    if (otherRelease) msg += " build every module against one pybind11 release (only identical IDs share a record)";
    if (otherAbi)
        msg += std::string(otherRelease ? ";" : "") +
               " build the modules of one release with the same compiler ABI and standard library (same compiler, same -fabi-version)";
    msg += "; or define PYBIND11_SIMPLE_GIL_MANAGEMENT in every module (pybind11 2.10.1 and later, 3.x included: gil_scoped_acquire is then PyGILState_Ensure/Release and reads no thread-state cache)";
    // Before 3.0.2 (internals <= v11) a record made on a worker thread seeds its key with that
    // thread's thread state, which another record may delete (pybind11 #2888, fixed by #5870).
    bool seeds = false;
    for (const auto& rec : records) seeds = seeds || rec.id.version <= 11;
    if (seeds)
        msg += "; or import the modules of records made by pybind11 before 3.0.2 once on the main thread before worker threads use them (such a record made on a worker thread caches that thread's thread state)";
    return msg + ".";
}

std::string multipleRuntimesMessage(const Finding& f) {
    std::string msg = std::to_string(f.runtimes.size()) + " initialised copies of CPython are loaded:";
    for (const auto& rt : f.runtimes) {
        msg += " " + rt.module + " (" + rt.version + ", _PyRuntime " + hexAddress(rt.address);
        if (rt.autoTssKey) msg += ", autoTSSkey pthread key " + std::to_string(*rt.autoTssKey);
        msg += ")";
    }
    std::map<uint32_t, int> keyUse;
    for (const auto& rt : f.runtimes)
        if (rt.autoTssKey) ++keyUse[*rt.autoTssKey];
    for (const auto& [key, n] : keyUse)
        if (n > 1)
            msg += ". Their autoTSSkey use the same pthread key " + std::to_string(key) +
                   " from different libc copies (dlmopen namespaces): every thread's slot holds whichever copy wrote last, which is a key collision, not memory corruption";
    return msg;
}

// "f (file.py:7) called from native g (file.cpp:9)"
std::string where(const NativeFrame& at, const std::optional<PyFrame>& py) {
    std::string out;
    if (py && !py->function.empty()) {
        out = py->function + " (" + py->file + ":" + std::to_string(py->line) + ")";
        if (!at.function.empty()) out += " called from native ";
    }
    if (!at.function.empty()) {
        out += at.function;
        if (!at.file.empty()) out += " (" + at.file + ":" + std::to_string(at.line) + ")";
    }
    return out;
}

// "LWP 12 holds the GIL and waits for mutex 0x... held by LWP 3 in f (file.cpp:7)"
std::string blockedWords(int lwp, const std::string& state, const BlockedOn& b) {
    std::string at = where(b.at, b.pythonAt);
    return "LWP " + std::to_string(lwp) + " " + state + " and " + waitWords(b.kind, b.object, b.call) + heldByWords(b.kind, b.heldBy) +
           (at.empty() ? "" : " in " + at);
}

// asyncio (--tasks): a task named by its name and address, where it is in the program.
std::string taskWords(const std::string& name, uint64_t task) {
    return "task " + (name.empty() ? std::string() : "'" + name + "' ") + hexAddress(task);
}
std::string frameWords(const std::optional<PyFrame>& frame) {
    if (!frame) return "";
    // The whole path, as the other frames findings name (where, holderWords).
    return " at " + frame->function + " (" + frame->file + ":" + std::to_string(frame->line) + ")";
}

// A cycle of asyncio tasks: each awaits the next, or a lock the next holds (inside `async with`).
std::string taskDeadlockMessage(const Finding& f) {
    std::map<uint64_t, std::string> names;
    for (const auto& s : f.taskCycle) names[s.task] = s.name;
    std::string chain;
    bool locks = false;
    for (const auto& s : f.taskCycle) {
        chain += (chain.empty() ? "" : "; ") + taskWords(s.name, s.task) + frameWords(s.at);
        if (s.waitsFor == "task") {
            chain += " awaits " + taskWords(names[s.object], s.object);
        } else if (awaitsThroughFuture(s.waitsFor)) {
            chain += " awaits " + s.waitsFor + " " + hexAddress(s.object) + ", which waits for " + taskWords(names[s.heldByTask], s.heldByTask);
        } else {
            locks = true;
            chain += " waits for asyncio " + s.waitsFor + " " + hexAddress(s.object) + " held by " + taskWords(names[s.heldByTask], s.heldByTask) +
                     " (inside its `async with`)";
        }
    }
    std::string msg = std::to_string(f.taskCycle.size()) + " asyncio tasks wait for each other in a cycle: " + chain + ". ";
    if (locks)
        msg += "Likely cause: tasks take the same asyncio locks in opposite orders (async with a: async with b in one, "
               "b then a in the other): take them in one order everywhere, or use one lock";
    else
        msg += "Likely cause: tasks that await each other (a task awaiting a task that awaits it back): none of them can finish";
    return msg;
}

std::string eventLoopBlockedMessage(const Finding& f) {
    std::string blocked = f.blocked ? blockedOnWords(*f.blocked) : "is blocked in " + (f.function.empty() ? std::string("a blocking call") : f.function + "()");
    std::string inside = f.task ? " inside " + taskWords(f.taskName, f.task) : " inside one of its callbacks (no task runs)";
    return "LWP " + (f.lwp ? std::to_string(*f.lwp) : std::string("?")) + " runs asyncio event loop " + hexAddress(f.loop) + " and " + blocked +
           inside + frameWords(f.taskFrame) + ", not in the loop's selector; waiting on the loop: " + loopWaitingWords(f.readyCallbacks, f.timers) +
           ". Likely cause: a blocking call in a coroutine or callback (time.sleep, a threading lock, blocking I/O): await its asyncio "
           "counterpart (asyncio.sleep, asyncio.Lock, loop I/O) or run it in an executor (asyncio.to_thread, loop.run_in_executor)";
}

// A cycle through a GIL wait while the runtime finalizes (a hang at exit: cpython #87135, torch
// #38228, pybind11 #2215). take_gil checks whether the runtime finalizes on entry and once it has
// the GIL (3.8), and also after each timed-out wait (gh-96387: 3.9-3.13's current releases end the
// thread there, with PyThread_exit_thread, within the switch interval); 3.14+ hang the thread
// forever instead (PyThread_hang_thread, gh-87135). Measured: a host whose finalizer joins such a
// thread with the GIL held hangs on 3.8.18 and exits on 3.9.18-3.13.0 (tests/state).
std::string finalizingGilWords(const Finding& f) {
    std::string msg = "The runtime is finalizing";
    if (f.finalizingLwp) msg += " (LWP " + std::to_string(*f.finalizingLwp) + " runs Py_FinalizeEx)";
    msg += ": a thread that waits for the GIL now will never get it back";
    if (f.finalizingMinor >= 14) msg += " (CPython 3.14+ hangs it in take_gil for good)";
    else if (f.finalizingMinor >= 9) msg += " (CPython 3.9-3.13 end it, with pthread_exit, from take_gil's wait)";
    else if (f.finalizingMinor == 8) msg += " (CPython 3.8 ends it, with pthread_exit, once it takes the GIL, which the finalizing thread holds)";
    return msg + ": join or stop such threads before Py_Finalize (or in an atexit callback), not after it";
}

std::string deadlockMessage(const Finding& f) {
    if (!f.taskCycle.empty()) return taskDeadlockMessage(f);
    const auto& cycle = f.cycle;
    std::string chain;
    std::vector<int> late;
    for (const auto& s : cycle) {
        if (s.ownerReadLate) late.push_back(s.lwp);
        chain += (chain.empty() ? "" : "; ") + std::string("LWP ") + std::to_string(s.lwp) + " " + waitWords(s.waitsFor, s.object, s.call) +
                 pythonWaitWords(s.pythonKind, s.pythonObject, s.pythonName) + heldByWords(s.waitsFor, s.heldBy) +
                 holderWords(s.holderEvidence, s.holderAt, s.holderWithLine, s.holderName);
    }
    // A stop of the world in the cycle: the thread it waits for blocks while attached.
    const CycleStep* stop = nullptr;
    const CycleStep* holder = nullptr;
    for (const auto& s : cycle) {
        if (s.waitsFor == WaitKind::StopTheWorld) stop = &s;
        if (s.holdsGil && s.waitsFor != WaitKind::Gil) holder = &s;
    }
    std::string msg = (cycle.size() == 1 ? std::string("1 thread waits for itself: ")
                                         : std::to_string(cycle.size()) + " threads wait for each other in a cycle: ") + chain + ". ";
    if (cycle.size() == 1) {
        // One thread waits for what it holds itself: no lock order is at fault.
        const CycleStep& self = cycle.front();
        if (self.waitsFor == WaitKind::Gil) {
            uint64_t held = 0;
            for (const auto& s : f.sources)
                if (const auto* g = std::get_if<source::GilHolder>(&s); g && g->lwp == self.lwp) held = g->tstate;
            msg += "It takes the GIL again while it holds it" + (held ? " with thread state " + hexAddress(held) : std::string()) +
                   ". Likely cause: a second PyEval_RestoreThread, PyGILState_Ensure or gil_scoped_acquire with another "
                   "thread state (a stale cached one, or one swapped in without releasing the GIL): release the GIL "
                   "(PyEval_SaveThread) before taking it with another state";
        } else {
            msg += "It waits for a lock it holds itself (a non-recursive lock taken twice on one thread): release it "
                   "first, or use a recursive lock";
        }
    } else if (stop && stop->heldBy) {
        // The thread it waits for is the next one of the cycle.
        CycleStep attached;
        for (const auto& s : cycle)
            if (s.lwp == *stop->heldBy) attached = s;
        msg += "LWP " + std::to_string(*stop->heldBy) + " is attached to Python while it " +
               waitWords(attached.waitsFor, attached.object, attached.call) +
               ": detach before blocking (py::gil_scoped_release, Py_BEGIN_ALLOW_THREADS); in a free-threaded build an "
               "attached thread that blocks keeps every stop of the world (a garbage collection among them) waiting";
    } else if (holder) {
        msg += "LWP " + std::to_string(holder->lwp) + " holds the GIL while it " + waitWords(holder->waitsFor, holder->object, holder->call) +
               ": release the GIL before blocking (py::gil_scoped_release, Py_BEGIN_ALLOW_THREADS), or take the GIL "
               "and the other locks in one order everywhere";
    } else {
        msg += "The locks are taken in opposite orders: take them in one order everywhere";
    }
    if (f.finalizingGilWait) msg += ". " + finalizingGilWords(f);
    if (!late.empty())
        msg += ". The owner of what LWP " + lwpList(late) + (late.size() == 1 ? " waits" : " wait") +
               " for was read after the process was resumed: if it changed since the stop, this cycle is not real; "
               "check again to confirm";
    return msg;
}

std::string gilHeldMessage(const Finding& f) {
    if (!f.blocked) return "";
    return blockedWords(f.lwp.value_or(0), "holds the GIL", *f.blocked) + ", while " + std::to_string(f.waiters.size()) +
           (f.waiters.size() == 1 ? " thread waits" : " threads wait") + " for the GIL (LWP " + lwpList(f.waiters) +
           "): release the GIL around blocking calls (Py_BEGIN_ALLOW_THREADS, py::gil_scoped_release)";
}

std::string stopTheWorldMessage(const Finding& f) {
    if (!f.blocked) return "";
    std::string msg = blockedWords(f.lwp.value_or(0), "is attached to Python", *f.blocked);
    msg += ", while LWP " + lwpList(f.waiters) + (f.waiters.size() == 1 ? " stops" : " stop") + " the world";
    if (f.waiters.size() == 1 && !f.stopFor.empty()) msg += " (for " + f.stopFor + ")";
    return msg + " and waits for it to detach: detach before blocking (py::gil_scoped_release, Py_BEGIN_ALLOW_THREADS); "
                 "in a free-threaded build an attached thread that blocks keeps every stop of the world (a garbage collection "
                 "among them) waiting";
}

std::string gilHolderWords(const source::GilHolder& g) {
    std::string interp = "interpreter " + std::to_string(g.interp) + "'s GIL";
    std::string run = ", run by LWP " + std::to_string(g.lwp);
    std::string words = g.source == Interpreter::GilSource::TstateCurrent
                            ? interp + " is locked and gilstate.tstate_current names tstate " + hexAddress(g.tstate) + run
                            : "the last_holder of " + interp + " names tstate " + hexAddress(g.tstate) + run;
    if (g.takenBy) words += "; last_holder names " + hexAddress(g.takenBy) + ", the state that took it";
    return "GIL holder (" + words + "; layout from " + layoutFrom(g.layout) + ")";
}

std::string lockOwnerWords(const source::LockOwner& o) {
    std::string field = o.kind == WaitKind::Mutex    ? "pthread_mutex_t.__data.__owner"
                        : o.kind == WaitKind::Rwlock ? "pthread_rwlock_t.__data.__cur_writer"
                                                     : "RLock.rlock_owner";
    std::string layout = o.layout.empty() ? "" : " (layout from " + o.layout + ")";
    // A live target resumed before the waits were read: this owner is not from the stop's copy.
    if (o.late) layout += ", read from the running process after the stop ended";
    return field + " at " + hexAddress(o.object) + layout;
}

}  // namespace

std::string tstateMemoryWords(const TstateMemory& m) { return memoryWords(m); }

std::optional<int> sourceLwp(const FindingSource& s) {
    if (const auto* p = std::get_if<source::Current>(&s)) return p->lwp;
    if (const auto* p = std::get_if<source::AutoTss>(&s)) return p->lwp;
    if (const auto* p = std::get_if<source::Pybind11Key>(&s)) return p->lwp;
    return std::nullopt;
}

std::string sourceWords(const FindingSource& s) {
    return std::visit(
        Overloaded{
            [](const source::Current& c) { return "CPython's current thread state (" + c.variable + ")"; },
            [](const source::AutoTss& a) {
                return a.threadLocal ? std::string("PyGILState's slot (_Py_tss_gilstate)")
                                     : "PyGILState's autoTSSkey slot (pthread key " + std::to_string(a.key) + ")";
            },
            [](const source::Pybind11Key& p) { return "pybind11 key " + std::to_string(p.key) + " (" + p.record + ")"; },
            [](const source::RuntimeCurrent& r) { return "CPython " + r.version + "'s gilstate.tstate_current"; },
            [](const source::Gil& g) { return "the GIL of interpreter " + std::to_string(g.interp); },
            [](const source::ThreadList& t) { return "the thread list of interpreter " + std::to_string(t.interp); },
            [](const source::RunnerStack& r) {
                return "the stack of LWP " + std::to_string(r.lwp) + " (" + runnerEvidenceWords(r.evidence) + ")";
            },
            [](const source::GreenletState& g) { return "greenlet " + hexAddress(g.greenlet) + "'s saved Python state"; },
            [](const source::FrameStack& t) { return "thread state " + hexAddress(t.tstate) + "'s current frame stack"; },
            [](const source::InternalsRecord& r) {
                return "pybind11 internals " + r.id + (r.address ? " at " + hexAddress(r.address) : std::string());
            },
            [](const source::RuntimeCopy& r) { return "_PyRuntime " + hexAddress(r.address) + " in " + r.module; },
            [](const source::NativeStack& n) {
                std::string stack = "native stack of LWP " + std::to_string(n.lwp);
                if (n.frameAlways) return stack + " (frame #" + std::to_string(n.frame.value_or(0)) + " " + n.function + ")";
                if (n.frame && !n.function.empty()) stack += " (frame #" + std::to_string(*n.frame) + " " + n.function + ")";
                return stack;
            },
            [](const source::GilHolder& g) { return gilHolderWords(g); },
            [](const source::LockOwner& o) { return lockOwnerWords(o); },
            [](const source::JoinedThread& j) {
                return "struct pthread at " + hexAddress(j.object) + " of LWP " + std::to_string(j.lwp) + " (the joined thread)" +
                       (j.late ? ", its TID read from the running process after the stop ended" : "");
            },
            [](const source::WithBlock& w) {
                return "the with-block of LWP " + std::to_string(w.lwp) + " holding " + hexAddress(w.object) + ": " + w.function + " (" +
                       w.file + ":" + std::to_string(w.line) + ")" + (w.withLine > 0 ? ", `with` at line " + std::to_string(w.withLine) : "") +
                       ", frame " + hexAddress(w.frame) + " (layout from " + w.layout + ")";
            },
            [](const source::AttachedState& a) {
                return "PyThreadState.state at " + hexAddress(a.object) + " (layout from " + layoutFrom(a.layout) +
                       "): attached, run by LWP " + std::to_string(a.lwp);
            },
        },
        s);
}

std::vector<std::string> findingSourceLines(const Finding& f) {
    std::vector<std::string> out;
    out.reserve(f.sources.size());
    for (const auto& s : f.sources) {
        // Two threads' slots: each line says whose.
        auto lwp = f.code == FindingCode::SharedTstate ? sourceLwp(s) : std::nullopt;
        out.push_back((lwp ? "LWP " + std::to_string(*lwp) + ": " : "") + sourceWords(s));
    }
    return out;
}

std::string findingMessage(const Finding& f) {
    switch (f.code) {
        case FindingCode::StaleTstate: return staleMessage(f);
        case FindingCode::TlsMismatch: return mismatchMessage(f);
        case FindingCode::ForeignTstate: return foreignMessage(f);
        case FindingCode::SharedTstate: return sharedMessage(f);
        case FindingCode::InvalidGilHolder: return invalidGilHolderMessage(f);
        case FindingCode::OrphanTstate: return orphanMessage(f);
        case FindingCode::GilstateOtherInterpreter: return otherInterpreterMessage(f);
        case FindingCode::InternalsSplit: return splitMessage(f);
        case FindingCode::InternalsIstateMismatch: return istateMismatchMessage(f);
        case FindingCode::MultipleRuntimes: return multipleRuntimesMessage(f);
        case FindingCode::GreenletBadFrame: return greenletBadFrameMessage(f);
        case FindingCode::GreenletFrameOnThread: return greenletFrameOnThreadMessage(f);
        case FindingCode::Deadlock: return deadlockMessage(f);
        case FindingCode::GilHeldWhileBlocked: return gilHeldMessage(f);
        case FindingCode::StopTheWorldBlocked: return stopTheWorldMessage(f);
        case FindingCode::EventLoopBlocked: return eventLoopBlockedMessage(f);
    }
    return "";
}

std::string waitWords(WaitKind kind, uint64_t object, const std::string& call) {
    std::string obj = object ? " " + hexAddress(object) : "";
    switch (kind) {
        case WaitKind::Gil: return "waits for the GIL";
        case WaitKind::Mutex: return "waits for mutex" + obj;
        case WaitKind::Rwlock: return "waits for rwlock" + obj;
        case WaitKind::Join: return "joins thread" + obj;
        case WaitKind::PythonLock: return "waits for Python lock" + obj;
        case WaitKind::Condition: return "waits on a condition variable";
        case WaitKind::Futex: return "waits on a futex";
        case WaitKind::Syscall: return call.empty() ? "is blocked in a system call" : "is blocked in " + call + "()";
        case WaitKind::StopTheWorld: return call.empty() ? "stops the world" : "stops the world (for " + call + ")";
        case WaitKind::None: return "runs";
    }
    return "";
}

std::string waitWouldWords(WaitKind kind, uint64_t object, const std::string& call) {
    std::string obj = object ? " " + hexAddress(object) : "";
    switch (kind) {
        case WaitKind::Gil: return "wait for the GIL";
        case WaitKind::Mutex: return "wait for mutex" + obj;
        case WaitKind::Rwlock: return "wait for rwlock" + obj;
        case WaitKind::Join: return "join thread" + obj;
        case WaitKind::PythonLock: return "wait for Python lock" + obj;
        case WaitKind::Condition: return "wait on a condition variable";
        case WaitKind::Futex: return "wait on a futex";
        case WaitKind::Syscall: return call.empty() ? "block in a system call" : "block in " + call + "()";
        case WaitKind::StopTheWorld: return call.empty() ? "stop the world" : "stop the world (for " + call + ")";
        case WaitKind::None: return "run";
    }
    return "";
}

std::string pythonWaitWords(const std::string& kind, uint64_t object, const std::string& name) {
    std::string named = name.empty() ? "" : " `" + name + "`";
    if (kind.empty()) return named;
    if (kind == "asyncio-loop") return ", idle in the selector of asyncio event loop" + (object ? " " + hexAddress(object) : std::string());
    static const std::map<std::string, std::string> kTypes = {{"condition", "Condition"}, {"event", "Event"}, {"queue", "Queue"},
                                                              {"semaphore", "Semaphore"}, {"join", "Thread"}};
    auto type = kTypes.find(kind);
    std::string what = type == kTypes.end() ? kind : type->second;
    return std::string(kind == "join" ? ", a join of " : ", a wait on ") + what + (object ? " " + hexAddress(object) : "") + named;
}

std::string holderWords(const std::string& evidence, const std::optional<PyFrame>& at, int withLine, const std::string& name) {
    if (evidence != "with-block" || !at) return "";
    return " (" + (name.empty() ? std::string() : "as `" + name + "`, ") + "a with-block in " + at->function + " at " + at->file + ":" + std::to_string(at->line) +
           (withLine > 0 ? ", `with` at line " + std::to_string(withLine) : "") + ")";
}

std::string blockedOnWords(const BlockedOn& b) {
    return waitWords(b.kind, b.object, b.call) + pythonWaitWords(b.pythonKind, b.pythonObject, b.pythonName) +
           heldByWords(b.kind, b.heldBy) + holderWords(b.holderEvidence, b.holderAt, b.holderWithLine, b.holderName);
}

namespace {

std::string count(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f s", s);
    return buf;
}

}  // namespace

std::string loopWaitingWords(const std::optional<size_t>& ready, const std::optional<LoopTimers>& timers) {
    std::string out = ready ? count(*ready, "callback", "callbacks") + " ready to run" : "its ready queue unread";
    if (!timers) return out + ", its timers unread";
    out += ", " + count(timers->scheduled, "timer", "timers") + " scheduled";
    if (!timers->due) return out + (timers->scheduled ? " (a core records no clock: which are due is not known)" : "");
    if (*timers->due) out += ", " + std::to_string(*timers->due) + " due (the earliest " + seconds(timers->mostOverdue.value_or(0)) + " ago)";
    else if (timers->scheduled) out += ", none due (the next in " + seconds(timers->nextIn.value_or(0)) + ")";
    return out;
}

std::string heldByWords(WaitKind kind, const std::optional<int>& heldBy) {
    if (!heldBy) return "";
    if (kind == WaitKind::StopTheWorld) return ", waiting for LWP " + std::to_string(*heldBy) + " to detach";
    return " held by LWP " + std::to_string(*heldBy);
}

namespace {

// Where a value sits, in words for the crash's one-line explanation.
std::string crashHolderWords(const NativeFrame& frame, size_t index, const FrameValue& v) {
    std::string where = (frame.function.empty() ? "an unknown function" : frame.function) + " (frame #" + std::to_string(index) + ")";
    switch (v.kind) {
        case FrameValue::Kind::Parameter:
            return where + " was handed " + v.name + "=" + hexAddress(v.value);
        case FrameValue::Kind::Register:
            return where + " holds " + hexAddress(v.value) + " in register " + v.name;
        case FrameValue::Kind::StackWord:
            return "a word of the stack frame of " + where + " holds " + hexAddress(v.value);
    }
    return where;
}

}  // namespace

std::string crashExplanationWords(const Report& report) {
    if (!report.crash || !report.crash->tie || report.crash->explainedBy.empty()) return {};
    const CrashReport& crash = *report.crash;
    const CrashReport::Tie& tie = *crash.tie;
    if (tie.frame >= crash.stack.frames.size()) return {};
    const NativeFrame& frame = crash.stack.frames[tie.frame];
    std::set<std::string> codes;
    for (size_t i : crash.explainedBy)
        if (i < report.findings.size()) codes.insert(findingName(report.findings[i].code));
    std::string which;
    for (const auto& c : codes) which += (which.empty() ? "" : " and ") + c;
    if (!tie.value)  // an abort: a thread-state check failed in that frame
        return "the abort is likely the " + which + " below: " + frame.function + " (frame #" + std::to_string(tie.frame) +
               ") failed on a thread whose thread-state pointers the finding" + (codes.size() == 1 ? " names" : "s name");
    const FrameValue& v = *tie.value;
    std::string out = std::string(v.kind == FrameValue::Kind::Parameter ? "the crash is most likely the " : "the crash is likely the ") +
                      which + " below: " + crashHolderWords(frame, tie.frame, v);
    // The sources of the first finding that names a thread (the crashing one), else of the first.
    const Finding* first = nullptr;
    for (size_t i : crash.explainedBy)
        if (i < report.findings.size() && (!first || (!first->lwp && report.findings[i].lwp))) first = &report.findings[i];
    auto lines = first ? findingSourceLines(*first) : std::vector<std::string>{};
    std::string named;
    for (size_t i = 0; i < lines.size(); ++i) named += (i == 0 ? "" : i + 1 == lines.size() ? " and " : ", ") + lines[i];
    if (!named.empty())
        out += ", which " + named + " still name" + (first->sources.size() == 1 ? "s" : "") + (first->lwp ? " on this thread" : "");
    return out;
}

}  // namespace pytstates
