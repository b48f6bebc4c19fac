// SPDX-License-Identifier: Apache-2.0
#include "commands/findings.h"
#include "commands/tstate_runners.h"

#include "symbols/pybind11/internals_id.h"

#include "symbols/cpython/python_objects.h"
#include "symbols/glibc/malloc_chunk.h"

#include <algorithm>
#include <map>
#include <set>

namespace pytstates {

namespace {

struct KnownTstate {
    size_t runtime = 0;
    uint64_t interp = 0;
    int64_t interpId = 0;
    std::optional<int> lwp;    // the thread that runs it; none: parked
    std::optional<int> madeBy; // the thread that made it, when it exists
};

// One per-thread pointer and where it came from.
struct Pointer {
    int lwp = 0;
    uint64_t tstate = 0;
    std::string source;  // for messages
    std::string cause;   // the likely cause when it is stale
    enum class Kind { Current, AutoTss, Pybind11 } kind = Kind::Current;
    size_t runtime = 0;  // the runtime whose key or variable this is
};

std::string lwpWords(const std::optional<int>& lwp) { return lwp ? "LWP " + std::to_string(*lwp) : "no live thread"; }

class Checker {
public:
    Checker(const Target& target, Report& report) : target_(target), r_(report) {
        for (size_t i = 0; i < r_.runtimes.size(); ++i)
            for (const auto& interp : r_.runtimes[i].interpreters)
                for (const auto& ts : interp.tstates) known_[ts.address] = {i, interp.address, interp.id, r_.lwpFor(ts.address), r_.makerFor(ts.address)};
        collectPointers();
    }

    void run() {
        findThreadsDeletingTheirState();
        addRuntimeFindings(r_);
        checkStale();
        checkForeignAndShared();
        checkMismatch();
        checkGil();
        checkOrphans();
        checkInternals();
        checkGreenlets();
    }

private:
    void add(FindingCode code, std::optional<int> lwp, uint64_t tstate, const std::string& message,
             std::vector<std::string> sources = {}) {
        Finding f;
        f.code = code;
        f.lwp = lwp;
        f.tstate = tstate;
        f.message = message;
        f.sources = std::move(sources);
        r_.findings.push_back(std::move(f));
    }

    // How many pybind11 internals records the interpreter holding this record holds.
    size_t recordsBeside(const InternalsView& view) const {
        size_t n = 0;
        for (const auto& other : r_.internals)
            if (!other.record.id.moduleLocal && other.record.interpreter == view.record.interpreter) ++n;
        return n;
    }

    void collectPointers() {
        for (const auto& row : r_.threads) {
            if (row.currentTstate)
                pointers_.push_back({row.lwp, row.currentTstate, "CPython's current thread state (" + row.currentSource + ")",
                                     "the thread state was deleted while CPython still had it current (a PyThreadState_Delete/Clear on the wrong thread, or a coroutine switch that did not restore it)",
                                     Pointer::Kind::Current, 0});
            if (row.autotssTstate)
                pointers_.push_back({row.lwp, row.autotssTstate,
                                     row.autotssThreadLocal ? std::string("PyGILState's slot (_Py_tss_gilstate)")
                                                            : "PyGILState's autoTSSkey slot (pthread key " + std::to_string(row.autotssKey.value_or(0)) + ")",
                                     "the thread state was deleted without PyGILState forgetting it (PyThreadState_Delete of a PyGILState-created state, or memory corruption)",
                                     Pointer::Kind::AutoTss, row.autotssRuntime});
        }
        for (const auto& view : r_.internals) {
            // The cause, from what memory shows: a second record in the same interpreter keeps a
            // cache of its own; with one record, only a delete outside pybind11 explains it.
            std::string cause = recordsBeside(view) > 1
                ? "another pybind11 internals record's gil_scoped_acquire (see internals-split), or a PyGILState_Release/PyThreadState_Delete, deleted this thread state while this record's key still caches it; the next gil_scoped_acquire on this thread of a module using this record would use it again"
                : "the thread state was deleted (PyGILState_Release, PyThreadState_Delete) while this record's key still caches it, as when pybind11's internals are first created inside a thread's gil_scoped_acquire; its next gil_scoped_acquire on this thread would use it again";
            for (const auto& v : view.values)
                pointers_.push_back({v.lwp, v.tstate,
                                     "pybind11 key " + std::to_string(view.record.tlsKey.value_or(0)) + " (" + view.record.id.raw + ")",
                                     cause, Pointer::Kind::Pybind11, view.runtimeIndex});
        }
    }

    // What the memory of a pointer that is in no list shows now, from evidence only.
    struct Look {
        enum class Kind { Unreadable, Freed, ResetInitial, Reset, StillValid, Reused } kind = Kind::Reused;
        std::string words;
    };

    Look secondLook(uint64_t p, size_t runtime) const {
        const auto& l = r_.runtimes.at(runtime < r_.runtimes.size() ? runtime : 0).layout;
        Look look;
        uint64_t head;
        if (!target_.readExact(p, &head, sizeof head)) return {Look::Kind::Unreadable, "its memory is not readable in the target"};
        auto interp = target_.readPointer(p + l.tstateInterp);
        auto threadId = target_.readPointer(p + l.tstateThreadId);
        auto prev = target_.readPointer(p + l.tstatePrev);
        auto next = target_.readPointer(p + l.tstateNext);
        const Interpreter* owner = nullptr;   // the interpreter its interp field names
        const Interpreter* holder = nullptr;  // the interpreter whose own state holds this memory
        for (const auto& r : r_.runtimes)
            for (const auto& i : r.interpreters) {
                if (interp && *interp == i.address) owner = &i;
                if (r.layout.interpSize > 0 && p >= i.address && p < i.address + static_cast<uint64_t>(r.layout.interpSize)) holder = &i;
            }
        std::string forThread;
        for (const auto& t : target_.threads())
            if (threadId && *threadId && *threadId == t.pthread) forThread = " for LWP " + std::to_string(t.lwp);
        if (looksLikeFreedTcacheEntry(target_, p)) {
            look = {Look::Kind::Freed, "its first 16 bytes look like a glibc tcache free-list entry: it was likely freed"};
            if (owner) look.words += " (the rest still reads as a thread state of interpreter " + hexAddress(owner->address) + forThread + ")";
        } else if (looksLikeFreedBinChunk(target_, p)) {
            look = {Look::Kind::Freed, "its malloc chunk is free (the next chunk's PREV_INUSE bit is clear and its prev_size repeats this chunk's size): it was freed"};
        } else if (interp && !*interp && prev && !*prev && next && !*next && threadId && !*threadId) {
            look = {Look::Kind::Reset, "its memory is reset to empty (interp, prev, next and thread_id are zero)"};
            if (holder) {
                look.kind = Look::Kind::ResetInitial;
                look.words += "; it lies inside the state of interpreter " + hexAddress(holder->address) +
                              ": that interpreter's built-in initial thread state, which CPython resets in place rather than frees when it is deleted";
            }
        } else if (owner) {
            look = {Look::Kind::StillValid, "its memory still reads as a thread state of interpreter " + hexAddress(owner->address) +
                                                forThread + ", unlinked from the list, its memory not overwritten"};
        } else {
            auto type = readPlausibleTypeName(target_, l, p);
            look = {Look::Kind::Reused, type ? "its memory now holds a Python '" + *type + "' object: it was likely freed and reused"
                                               : "its memory no longer reads as a thread state of any interpreter: it was likely freed and reused"};
        }
        return look;
    }

    // Whether the memory at p is still a whole thread state of `interp` for the thread whose
    // struct pthread is `pthread`: its own fields agree, its neighbours are NULL or thread states
    // of the same interpreter, and it is not on a malloc free list.
    bool stillAThreadState(uint64_t p, const CPythonLayout& l, uint64_t interp, uint64_t pthread) const {
        auto owner = target_.readPointer(p + l.tstateInterp);
        auto threadId = target_.readPointer(p + l.tstateThreadId);
        if (!owner || *owner != interp || !threadId || *threadId != pthread) return false;
        if (looksLikeFreedTcacheEntry(target_, p)) return false;
        for (int64_t link : {l.tstatePrev, l.tstateNext}) {
            auto neighbour = target_.readPointer(p + link);
            if (!neighbour) return false;
            if (*neighbour && target_.readPointer(*neighbour + l.tstateInterp).value_or(0) != interp) return false;
        }
        return true;
    }

    // A thread ending deletes its own thread state while it still holds the GIL with it:
    // CPython unlinks the state first and clears the current pointer, its TLS slot and the GIL
    // just after, then frees it. Such a pointer is in no list for a moment without anything being
    // wrong, as long as its memory is still the whole thread state; once freed, a GIL held with it
    // is an error.
    void findThreadsDeletingTheirState() {
        for (const auto& rt : r_.runtimes)
            for (const auto& interp : rt.interpreters) {
                uint64_t p = interp.gilKnown ? interp.gilHolder : 0;
                if (!p || known_.count(p)) continue;
                auto threadId = target_.readPointer(p + rt.layout.tstateThreadId);
                for (const auto& t : target_.threads()) {
                    if (!threadId || t.pthread != *threadId || !stillAThreadState(p, rt.layout, interp.address, t.pthread)) continue;
                    deleting_[p] = t.lwp;
                    r_.warnings.push_back("LWP " + std::to_string(t.lwp) + " is deleting its own thread state " + hexAddress(p) +
                                          " (unlinked, not yet freed, still holding the GIL with it): a thread ending, not an error");
                }
            }
    }

    bool beingDeletedBy(uint64_t tstate, int lwp) const {
        auto it = deleting_.find(tstate);
        return it != deleting_.end() && it->second == lwp;
    }

    bool collidingKeyOfOtherRuntime(const Pointer& p) const {
        auto it = known_.find(p.tstate);
        return p.kind == Pointer::Kind::AutoTss && r_.runtimes.size() > 1 && it != known_.end() && it->second.runtime != p.runtime;
    }

    // One finding per thread and pointer, naming every source that holds it.
    void checkStale() {
        std::map<std::pair<int, uint64_t>, std::vector<const Pointer*>> stale;
        for (const auto& p : pointers_) {
            if (known_.count(p.tstate)) continue;
            if (p.kind != Pointer::Kind::Pybind11 && beingDeletedBy(p.tstate, p.lwp)) continue;
            stale[{p.lwp, p.tstate}].push_back(&p);
        }
        for (auto& [key, ptrs] : stale) {
            // The most telling cause first: a pybind11 cache, then PyGILState's slot, then CPython's current pointer.
            std::stable_sort(ptrs.begin(), ptrs.end(), [](const Pointer* a, const Pointer* b) {
                auto rank = [](Pointer::Kind k) { return k == Pointer::Kind::Pybind11 ? 0 : k == Pointer::Kind::AutoTss ? 1 : 2; };
                return rank(a->kind) < rank(b->kind);
            });
            Look look = secondLook(key.second, ptrs.front()->runtime);
            // The memory's own evidence names the cause when it can: a built-in initial thread
            // state reset in place was deleted as its interpreter's creation thread state.
            std::string cause = ptrs.front()->cause;
            if (look.kind == Look::Kind::ResetInitial)
                cause = ptrs.front()->kind == Pointer::Kind::Pybind11
                            ? "the interpreter's built-in initial thread state was deleted while this record's key still names it; it is the "
                              "thread state an interpreter is created with, and pybind11 3.0.0-3.0.1's subinterpreter::create() caches it in "
                              "the record it makes there and then deletes it (Python 3.13+)"
                            : "the interpreter's built-in initial thread state was deleted while this pointer still names it";
            std::vector<std::string> sources;
            std::string named;
            for (size_t i = 0; i < ptrs.size(); ++i) {
                sources.push_back(ptrs[i]->source);
                named += (i == 0 ? "" : i + 1 == ptrs.size() ? " and " : ", ") + ptrs[i]->source;
            }
            std::string message = "LWP " + std::to_string(key.first) + ": " + named;
            message += (ptrs.size() == 1 ? " names " : " name ") + hexAddress(key.second);
            message += ", which is in no interpreter's thread list; " + look.words + ". Likely cause: " + cause + ".";
            add(FindingCode::StaleTstate, key.first, key.second, message, sources);
        }
        // <= 3.11: the process-wide current pointer, when no thread claimed it.
        for (size_t i = 0; i < r_.runtimes.size(); ++i) {
            const Runtime& rt = r_.runtimes[i];
            if (!rt.tstateCurrent || known_.count(rt.tstateCurrent) || deleting_.count(rt.tstateCurrent)) continue;
            bool claimed = false;
            for (const auto& row : r_.threads) claimed = claimed || row.currentTstate == rt.tstateCurrent;
            if (!claimed)
                add(FindingCode::StaleTstate, std::nullopt, rt.tstateCurrent,
                    "CPython " + rt.version + "'s gilstate.tstate_current names " + hexAddress(rt.tstateCurrent) +
                        ", which is in no interpreter's thread list; " + secondLook(rt.tstateCurrent, i).words + ".",
                    {"CPython " + rt.version + "'s gilstate.tstate_current"});
        }
    }

    void checkForeignAndShared() {
        std::map<uint64_t, std::map<int, std::vector<std::string>>> holders;  // tstate -> thread -> sources naming it
        for (const auto& p : pointers_) {
            auto it = known_.find(p.tstate);
            if (it == known_.end() || collidingKeyOfOtherRuntime(p)) continue;
            holders[p.tstate][p.lwp].push_back(p.source);
        }
        for (const auto& [tstate, byThread] : holders) {
            const KnownTstate& known = known_.at(tstate);
            for (const auto& [lwp, sources] : byThread) {
                // Only a state another thread runs now is foreign: a parked one may be handed
                // to this thread next (uWSGI swaps states made on its main thread into workers).
                if (!known.lwp || *known.lwp == lwp) continue;
                std::string named;
                for (size_t i = 0; i < sources.size(); ++i)
                    named += (i == 0 ? "" : i + 1 == sources.size() ? " and " : ", ") + sources[i];
                std::vector<std::string> all = sources;
                all.push_back("the stack of LWP " + std::to_string(*known.lwp) + " (" + runnerEvidenceWords(r_.places.at(tstate).evidence) + ")");
                add(FindingCode::ForeignTstate, lwp, tstate,
                    "LWP " + std::to_string(lwp) + ": " + named + (sources.size() == 1 ? " names " : " name ") + hexAddress(tstate) +
                        ", the thread state LWP " + std::to_string(*known.lwp) + " runs (interpreter " + std::to_string(known.interpId) +
                        "; " + runnerEvidenceWords(r_.places.at(tstate).evidence) +
                        "). Likely cause: a thread state handed between threads (a pool of thread states that whichever thread serves the next request takes, as mod_python's; a coroutine or fiber resumed on another thread) or a pointer cached across threads.",
                    all);
            }
            if (byThread.size() < 2) continue;
            std::string list;
            std::vector<std::string> sources;
            for (const auto& [lwp, named] : byThread) {
                list += (list.empty() ? "" : ", ") + std::to_string(lwp);
                for (const auto& n : named) sources.push_back("LWP " + std::to_string(lwp) + ": " + n);
            }
            add(FindingCode::SharedTstate, std::nullopt, tstate,
                "thread state " + hexAddress(tstate) + " is named by the TLS of LWPs " + list +
                    ": two threads would run Python on one thread state. Likely cause: a pthread key value copied to another thread, or a pointer cached in thread-local storage across threads.",
                sources);
        }
    }

    // Two sources of one thread disagree by mistake only about one interpreter: each interpreter
    // has its own thread states, and PyGILState's slot keeps the state of one interpreter while
    // the thread runs another's (mod_wsgi's application groups, uWSGI's mounted apps).
    void checkMismatch() {
        std::map<int, std::vector<const Pointer*>> byThread;
        for (const auto& p : pointers_)
            if (known_.count(p.tstate) && !collidingKeyOfOtherRuntime(p)) byThread[p.lwp].push_back(&p);
        for (const auto& [lwp, ptrs] : byThread) {
            std::string running = runsPython(lwp);
            if (running.empty()) continue;
            const Pointer* mismatchA = nullptr;
            const Pointer* mismatchB = nullptr;
            const Pointer* otherInterp = nullptr;  // PyGILState's slot naming a state of another interpreter
            const Pointer* current = nullptr;
            for (const auto* p : ptrs)
                if (p->kind == Pointer::Kind::Current) current = p;
            for (size_t i = 0; i < ptrs.size() && !mismatchA; ++i)
                for (size_t j = i + 1; j < ptrs.size(); ++j) {
                    if (ptrs[i]->tstate == ptrs[j]->tstate) continue;
                    if (known_.at(ptrs[i]->tstate).interp != known_.at(ptrs[j]->tstate).interp) {
                        if (current && (ptrs[i] == current || ptrs[j] == current)) {
                            const Pointer* other = ptrs[i] == current ? ptrs[j] : ptrs[i];
                            if (other->kind == Pointer::Kind::AutoTss) otherInterp = other;
                        }
                        continue;
                    }
                    mismatchA = ptrs[i];
                    mismatchB = ptrs[j];
                    break;
                }
            if (mismatchA) {
                const KnownTstate& k = known_.at(mismatchA->tstate);
                add(FindingCode::TlsMismatch, lwp, mismatchB->tstate,
                    "LWP " + std::to_string(lwp) + " " + running + " but " + mismatchA->source + " names " + hexAddress(mismatchA->tstate) +
                        " while " + mismatchB->source + " names " + hexAddress(mismatchB->tstate) + ", two thread states of interpreter " +
                        std::to_string(k.interpId) +
                        ". Likely cause: a thread-state swap (PyThreadState_Swap, a coroutine switch) that did not update every cache.",
                    {mismatchA->source, mismatchB->source});
            } else if (otherInterp && current) {
                const KnownTstate& cur = known_.at(current->tstate);
                const KnownTstate& gil = known_.at(otherInterp->tstate);
                add(FindingCode::GilstateOtherInterpreter, lwp, otherInterp->tstate,
                    "LWP " + std::to_string(lwp) + " " + running + " with thread state " + hexAddress(current->tstate) + " of interpreter " +
                        std::to_string(cur.interpId) + " while " + otherInterp->source + " names " + hexAddress(otherInterp->tstate) +
                        ", a thread state of interpreter " + std::to_string(gil.interpId) +
                        ": PyGILState keeps one thread state per thread, and a state of another interpreter swapped in "
                        "(PyEval_AcquireThread, PyThreadState_Swap) leaves it as it was. Not an error; PyGILState_Ensure on this thread "
                        "now would use interpreter " + std::to_string(gil.interpId) + ".",
                    {current->source, otherInterp->source});
            }
        }
    }

    // How a thread is running Python right now, in words ("" when it is not): it holds its
    // interpreter's GIL, or, without a GIL (free-threaded), one of its thread states is attached.
    std::string runsPython(int lwp) const {
        for (const auto& rt : r_.runtimes)
            for (const auto& interp : rt.interpreters) {
                if (r_.gilHolderLwp(interp) == lwp) return "holds the GIL";
                if (!interp.gilDisabled) continue;
                for (const auto& ts : interp.tstates)
                    if (ts.attached() && r_.lwpFor(ts.address) == lwp) return "is attached (free-threaded, no GIL)";
            }
        return "";
    }


    bool runnerUnknown(uint64_t tstate) const {
        auto place = r_.places.find(tstate);
        return place != r_.places.end() && place->second.runnerUnknown;
    }

    void checkGil() {
        for (size_t i = 0; i < r_.runtimes.size(); ++i)
            for (const auto& interp : r_.runtimes[i].interpreters) {
                if (!interp.gilKnown || !interp.gilHolder) continue;
                auto it = known_.find(interp.gilHolder);
                if (it == known_.end() && deleting_.count(interp.gilHolder)) continue;
                std::vector<std::string> sources = {"the GIL of interpreter " + std::to_string(interp.id)};
                if (it == known_.end())
                    add(FindingCode::InvalidGilHolder, std::nullopt, interp.gilHolder,
                        "interpreter " + std::to_string(interp.id) + "'s GIL is held by " + hexAddress(interp.gilHolder) +
                            ", which is in no thread list; " + secondLook(interp.gilHolder, i).words +
                            ". Likely cause: the GIL was taken with a deleted thread state (PyEval_AcquireThread/RestoreThread on a stale pointer).",
                        sources);
                else if (!it->second.lwp && !it->second.madeBy && !runnerUnknown(interp.gilHolder))
                    add(FindingCode::InvalidGilHolder, std::nullopt, interp.gilHolder,
                        "interpreter " + std::to_string(interp.id) + "'s GIL is held by thread state " + hexAddress(interp.gilHolder) +
                            " which runs on no thread and whose thread no longer exists: every other thread waiting for the GIL will wait forever. Likely cause: a thread exited while holding the GIL.",
                        sources);
            }
    }

    void checkOrphans() {
        // A thread stopped inside new_threadstate (its stop of the world waits) has listed its new
        // state, not yet bound to it: the newest unbound state of each interpreter is most likely
        // that one, and no orphan.
        bool making = false;
        for (const auto& row : r_.threads) making = making || (row.blockedOn && row.blockedOn->makingThreadState);
        for (const auto& rt : r_.runtimes)
            for (const auto& interp : rt.interpreters) {
                const ThreadState* newestUnbound = nullptr;
                for (const auto& ts : interp.tstates)
                    if (making && !ts.threadId && ts.id && (!newestUnbound || *ts.id > *newestUnbound->id)) newestUnbound = &ts;
                for (const auto& ts : interp.tstates) {
                    // A state its maker left behind: running nowhere, its maker gone. One made
                    // before a fork was the parent's to keep; the child may hand it out.
                    const TstatePlace& place = r_.places.at(ts.address);
                    if (place.lwp || place.madeBy || place.madeBeforeFork || place.runnerUnknown || &ts == newestUnbound) continue;
                    std::string msg = "thread state " + hexAddress(ts.address) + " (" + (ts.id ? "id " + std::to_string(*ts.id) + ", " : "") +
                                      "interpreter " + std::to_string(interp.id) + ") ";
                    if (!ts.threadId)
                        msg += "is bound to no thread (created with PyThreadState_New and never used).";
                    else
                        msg += "belongs to pthread " + hexAddress(ts.threadId) +
                               ", which no longer exists: the thread ended without PyGILState_Release/PyThreadState_Delete. It leaks, and a new thread that reuses the address gets it back through stale TLS.";
                    add(FindingCode::OrphanTstate, std::nullopt, ts.address, msg,
                        {"the thread list of interpreter " + std::to_string(interp.id)});
                }
            }
    }

    // A suspended greenlet resumes the frame it saved: that frame must be a frame, and on no live stack.
    void checkGreenlets() {
        for (const auto& scan : r_.greenlets)
            for (const auto& g : scan.greenlets) {
                if (g.state != "suspended") continue;
                std::optional<int> lwp;
                if (g.lwp) lwp = g.lwp;
                std::string who = std::string("suspended ") + (g.main ? "main " : "") + "greenlet " + hexAddress(g.address) + " (" + lwpWords(lwp) + ")";
                std::string source = "greenlet " + hexAddress(g.address) + "'s saved Python state";
                const std::string likely = " Likely cause: the frame was released while the greenlet still held it (a reference-count bug in C code around a switch), or memory corruption.";
                if (!g.savedFrameProblem.empty()) {
                    std::string msg = who + ": ";
                    msg += g.savedFrameProblem;
                    msg += ". Switching back to it makes that pointer its thread state's current frame.";
                    add(FindingCode::GreenletBadFrame, lwp, 0, msg + likely, {source});
                }
                if (!g.savedFrameObjectProblem.empty()) {
                    std::string msg = who + ": ";
                    msg += g.savedFrameObjectProblem;
                    msg += ". greenlet keeps it as the frame object of the frame it will resume.";
                    add(FindingCode::GreenletBadFrame, lwp, 0, msg + likely, {source});
                }
                if (g.savedFrameOnTstate) {
                    auto owner = r_.lwpFor(g.savedFrameOnTstate);
                    std::string msg = who + " will resume in frame " + hexAddress(g.savedFrame);
                    if (!g.frames.empty()) msg += " (" + g.frames.front().function + ")";
                    msg += ", which is also on the live frame stack of thread state " + hexAddress(g.savedFrameOnTstate);
                    msg += " (" + (owner ? "run by LWP " + std::to_string(*owner) : std::string("parked: run by no thread")) + "): one frame on two stacks. Likely cause: a switch that did not save or restore the thread "
                           "state's frame pointer (C code switching stacks behind greenlet's back), or a greenlet resumed on another thread.";
                    add(FindingCode::GreenletFrameOnThread, lwp, g.savedFrameOnTstate, msg,
                        {source, "thread state " + hexAddress(g.savedFrameOnTstate) + "'s current frame stack"});
                }
            }
    }

    void checkInternals() {
        std::map<uint64_t, std::vector<const InternalsView*>> byInterp;
        for (const auto& view : r_.internals) {
            const auto& rec = view.record;
            if (rec.id.moduleLocal) continue;
            byInterp[rec.interpreter].push_back(&view);
            if (rec.address && rec.istate && rec.istate != rec.interpreter)
                add(FindingCode::InternalsIstateMismatch, std::nullopt, 0,
                    "pybind11 internals " + rec.id.raw + " at " + hexAddress(rec.address) + " lives in the " + rec.dictName +
                        " of interpreter " + hexAddress(rec.interpreter) + " but its istate is " + hexAddress(rec.istate) +
                        ". Likely cause: the record was created under another interpreter (a sub-interpreter sharing builtins, or a stale record after re-initialisation).",
                    {"pybind11 internals " + rec.id.raw + " at " + hexAddress(rec.address)});
        }
        for (const auto& [interp, views] : byInterp)
            if (views.size() >= 2) {
                std::vector<std::string> sources;
                for (const auto* v : views) sources.push_back("pybind11 internals " + v->record.id.raw);
                add(FindingCode::InternalsSplit, std::nullopt, 0, splitMessage(interp, views), sources);
            }
    }

    // Every record with its key and users, then what separates each pair and what would merge
    // them: the same release with another compiler ABI or stdlib needs one build setting; records
    // of different internals versions come from different pybind11 releases, which no compiler
    // flag merges.
    static std::string splitMessage(uint64_t interp, const std::vector<const InternalsView*>& views) {
        std::string msg = "interpreter " + hexAddress(interp) + " holds " + std::to_string(views.size()) + " pybind11 internals records:";
        for (const auto* v : views) {
            const auto& rec = v->record;
            msg += " " + rec.id.raw + " (" + releasesOfInternalsVersion(rec.id.version) + ", key " +
                   (rec.tlsKey ? std::to_string(*rec.tlsKey) : "?") + ", used by ";
            std::string mods;
            for (const auto& m : rec.modules) mods += (mods.empty() ? "" : ", ") + m.path;
            msg += (mods.empty() ? "unknown modules" : mods) + ");";
        }
        bool otherRelease = false, otherAbi = false;
        for (size_t i = 0; i < views.size(); ++i)
            for (size_t j = i + 1; j < views.size(); ++j) {
                const auto& a = views[i]->record.id;
                const auto& b = views[j]->record.id;
                if (a.version != b.version) {
                    otherRelease = true;
                    msg += " " + a.raw + " and " + b.raw + " come from different pybind11 releases (internals v" +
                           std::to_string(a.version) + " and v" + std::to_string(b.version) + ");";
                } else {
                    otherAbi = true;
                    msg += " " + a.raw + " and " + b.raw + " are the same pybind11 internals built differently: " +
                           describeIdDifference(a, b) + ";";
                }
            }
        msg += " each record keeps its own thread-state cache, so their gil_scoped_acquire can delete each other's thread states. Fix:";
        if (otherRelease)
            msg += " build every module against one pybind11 release (only identical IDs share a record)";
        if (otherAbi)
            msg += std::string(otherRelease ? ";" : "") + " build the modules of one release with the same compiler ABI and standard library (same compiler, same -fabi-version)";
        msg += "; or define PYBIND11_SIMPLE_GIL_MANAGEMENT in every module (pybind11 2.10.1 and later, 3.x included: gil_scoped_acquire is then PyGILState_Ensure/Release and reads no thread-state cache)";
        // Before 3.0.2 (internals <= v11) a record made on a worker thread seeds its key with that
        // thread's thread state, which another record may delete (pybind11 #2888, fixed by #5870).
        bool seeds = false;
        for (const auto* v : views) seeds = seeds || v->record.id.version <= 11;
        if (seeds)
            msg += "; or import the modules of records made by pybind11 before 3.0.2 once on the main thread before worker threads use them (such a record made on a worker thread caches that thread's thread state)";
        return msg + ".";
    }

    const Target& target_;
    Report& r_;
    std::map<uint64_t, KnownTstate> known_;
    std::vector<Pointer> pointers_;
    std::map<uint64_t, int> deleting_;  // unlisted tstate -> the LWP deleting it while holding the GIL
};

}  // namespace

void addRuntimeFindings(Report& report) {
    if (report.runtimes.size() < 2) return;
    Finding f;
    f.code = FindingCode::MultipleRuntimes;
    f.message = std::to_string(report.runtimes.size()) + " initialised copies of CPython are loaded:";
    for (const auto& rt : report.runtimes) {
        f.message += " " + rt.modulePath + " (" + rt.version + ", _PyRuntime " + hexAddress(rt.address);
        if (rt.autoTssKey) f.message += ", autoTSSkey pthread key " + std::to_string(*rt.autoTssKey);
        f.message += ")";
        f.sources.push_back("_PyRuntime " + hexAddress(rt.address) + " in " + rt.modulePath);
    }
    std::map<uint32_t, int> keyUse;
    for (const auto& rt : report.runtimes)
        if (rt.autoTssKey) ++keyUse[*rt.autoTssKey];
    for (const auto& [key, n] : keyUse)
        if (n > 1)
            f.message += ". Their autoTSSkey use the same pthread key " + std::to_string(key) +
                         " from different libc copies (dlmopen namespaces): every thread's slot holds whichever copy wrote last, which is a key collision, not memory corruption";
    report.findings.push_back(f);
}

void addFindings(const Target& target, Report& report) { Checker(target, report).run(); }

}  // namespace pytstates
