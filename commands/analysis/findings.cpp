// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/findings.h"

#include <algorithm>
#include <map>

#include "symbols/cpython/tstate_memory.h"
#include "symbols/text/hex_address.h"

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
    FindingSource source;
    enum class Kind { Current, AutoTss, Pybind11 } kind = Kind::Current;
    size_t runtime = 0;  // the runtime whose key or variable this is
};

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
    Finding& add(FindingCode code, std::optional<int> lwp, uint64_t tstate, std::vector<FindingSource> sources) {
        Finding f;
        f.code = code;
        f.lwp = lwp;
        f.tstate = tstate;
        f.sources = std::move(sources);
        r_.findings.push_back(std::move(f));
        return r_.findings.back();
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
                pointers_.push_back({row.lwp, row.currentTstate, source::Current{row.lwp, row.currentTstate, row.currentSource},
                                     Pointer::Kind::Current, 0});
            if (row.autotssTstate)
                pointers_.push_back({row.lwp, row.autotssTstate,
                                     source::AutoTss{row.lwp, row.autotssTstate, row.autotssKey.value_or(0), row.autotssThreadLocal},
                                     Pointer::Kind::AutoTss, row.autotssRuntime});
        }
        for (const auto& view : r_.internals) {
            bool shared = recordsBeside(view) > 1;
            for (const auto& v : view.values)
                pointers_.push_back({v.lwp, v.tstate,
                                     source::Pybind11Key{v.lwp, v.tstate, view.record.tlsKey.value_or(0), view.record.id.raw, shared},
                                     Pointer::Kind::Pybind11, view.runtimeIndex});
        }
    }

    TstateMemory secondLook(uint64_t p, size_t runtime) const { return lookAtTstateMemory(target_, r_.runtimes, runtime, p); }

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
                for (int lwp : threadsDeletingTstate(target_, rt.layout, p, interp.address)) {
                    deleting_[p] = lwp;
                    r_.warnings.push_back("LWP " + std::to_string(lwp) + " is deleting its own thread state " + hexAddress(p) +
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
            std::vector<FindingSource> sources;
            for (const auto* p : ptrs) sources.push_back(p->source);
            add(FindingCode::StaleTstate, key.first, key.second, std::move(sources)).memory = secondLook(key.second, ptrs.front()->runtime);
        }
        // <= 3.11: the process-wide current pointer, when no thread claimed it.
        for (size_t i = 0; i < r_.runtimes.size(); ++i) {
            const Runtime& rt = r_.runtimes[i];
            if (!rt.tstateCurrent || known_.count(rt.tstateCurrent) || deleting_.count(rt.tstateCurrent)) continue;
            bool claimed = false;
            for (const auto& row : r_.threads) claimed = claimed || row.currentTstate == rt.tstateCurrent;
            if (!claimed)
                add(FindingCode::StaleTstate, std::nullopt, rt.tstateCurrent, {source::RuntimeCurrent{rt.version}}).memory =
                    secondLook(rt.tstateCurrent, i);
        }
    }

    void checkForeignAndShared() {
        std::map<uint64_t, std::map<int, std::vector<FindingSource>>> holders;  // tstate -> thread -> sources naming it
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
                const std::string& evidence = r_.places.at(tstate).evidence;
                std::vector<FindingSource> all = sources;
                all.emplace_back(source::RunnerStack{*known.lwp, evidence});
                Finding& f = add(FindingCode::ForeignTstate, lwp, tstate, std::move(all));
                f.runner = known.lwp;
                f.evidence = evidence;
                f.interpId = known.interpId;
            }
            if (byThread.size() < 2) continue;
            std::vector<FindingSource> sources;
            for (const auto& [lwp, named] : byThread) sources.insert(sources.end(), named.begin(), named.end());
            add(FindingCode::SharedTstate, std::nullopt, tstate, std::move(sources));
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
            RunsPython running = runsPython(lwp);
            if (running == RunsPython::No) continue;
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
                Finding& f = add(FindingCode::TlsMismatch, lwp, mismatchB->tstate, {mismatchA->source, mismatchB->source});
                f.running = running;
                f.interpId = known_.at(mismatchA->tstate).interpId;
            } else if (otherInterp && current) {
                Finding& f = add(FindingCode::GilstateOtherInterpreter, lwp, otherInterp->tstate, {current->source, otherInterp->source});
                f.running = running;
                f.currentInterpId = known_.at(current->tstate).interpId;
                f.interpId = known_.at(otherInterp->tstate).interpId;
            }
        }
    }

    // How a thread is running Python right now: it holds its interpreter's GIL, or, without a GIL
    // (free-threaded), one of its thread states is attached.
    RunsPython runsPython(int lwp) const {
        for (const auto& rt : r_.runtimes)
            for (const auto& interp : rt.interpreters) {
                if (r_.gilHolderLwp(interp) == lwp) return RunsPython::HoldsGil;
                if (!interp.gilDisabled) continue;
                for (const auto& ts : interp.tstates)
                    if (ts.attached() && r_.lwpFor(ts.address) == lwp) return RunsPython::Attached;
            }
        return RunsPython::No;
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
                if (it == known_.end()) {
                    Finding& f = add(FindingCode::InvalidGilHolder, std::nullopt, interp.gilHolder, {source::Gil{interp.id}});
                    f.interpId = interp.id;
                    f.memory = secondLook(interp.gilHolder, i);
                } else if (!it->second.lwp && !it->second.madeBy && !runnerUnknown(interp.gilHolder)) {
                    add(FindingCode::InvalidGilHolder, std::nullopt, interp.gilHolder, {source::Gil{interp.id}}).interpId = interp.id;
                }
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
                    Finding& f = add(FindingCode::OrphanTstate, std::nullopt, ts.address, {source::ThreadList{interp.id}});
                    f.tstateId = ts.id;
                    f.interpId = interp.id;
                    f.pthread = ts.threadId;
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
                GreenletFacts facts;
                facts.address = g.address;
                facts.main = g.main;
                facts.savedFrame = g.savedFrame;
                if (!g.frames.empty()) facts.function = g.frames.front().function;
                source::GreenletState saved{g.address};
                for (const std::string* problem : {&g.savedFrameProblem, &g.savedFrameObjectProblem}) {
                    if (problem->empty()) continue;
                    Finding& f = add(FindingCode::GreenletBadFrame, lwp, 0, {saved});
                    f.greenlet = facts;
                    f.greenlet->problem = *problem;
                    f.greenlet->frameObject = problem == &g.savedFrameObjectProblem;
                }
                if (g.savedFrameOnTstate) {
                    Finding& f = add(FindingCode::GreenletFrameOnThread, lwp, g.savedFrameOnTstate,
                                     {saved, source::FrameStack{g.savedFrameOnTstate}});
                    f.greenlet = facts;
                    f.runner = r_.lwpFor(g.savedFrameOnTstate);
                }
            }
    }

    static RecordFacts recordFacts(const InternalsRecord& rec) {
        RecordFacts facts{rec.id, rec.address, rec.dictName, rec.interpreter, rec.istate, rec.tlsKey, {}};
        for (const auto& m : rec.modules) facts.modules.push_back(m.path);
        return facts;
    }

    void checkInternals() {
        std::map<uint64_t, std::vector<const InternalsView*>> byInterp;
        for (const auto& view : r_.internals) {
            const auto& rec = view.record;
            if (rec.id.moduleLocal) continue;
            byInterp[rec.interpreter].push_back(&view);
            if (rec.address && rec.istate && rec.istate != rec.interpreter)
                add(FindingCode::InternalsIstateMismatch, std::nullopt, 0, {source::InternalsRecord{rec.id.raw, rec.address}})
                    .records.push_back(recordFacts(rec));
        }
        for (const auto& [interp, views] : byInterp)
            if (views.size() >= 2) {
                std::vector<FindingSource> sources;
                for (const auto* v : views) sources.emplace_back(source::InternalsRecord{v->record.id.raw, 0});
                Finding& f = add(FindingCode::InternalsSplit, std::nullopt, 0, std::move(sources));
                f.interp = interp;
                for (const auto* v : views) f.records.push_back(recordFacts(v->record));
            }
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
    for (const auto& rt : report.runtimes) {
        f.runtimes.push_back({rt.modulePath, rt.version, rt.address, rt.autoTssKey});
        f.sources.emplace_back(source::RuntimeCopy{rt.address, rt.modulePath});
    }
    report.findings.push_back(f);
}

void addFindings(const Target& target, Report& report) { Checker(target, report).run(); }

}  // namespace pytstates
