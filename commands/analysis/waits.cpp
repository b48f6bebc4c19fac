// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/waits.h"

#include "commands/analysis/python_waits.h"

#include <algorithm>
#include <unordered_map>

#include "symbols/arch/syscalls.h"
#include "symbols/cpython/locks.h"
#include "symbols/glibc/lock_layout.h"
#include "symbols/text/base_name.h"

namespace pytstates {

namespace {

// Deep enough for the longest wait seen: glibc 2.41's cancellable syscall under a condition
// variable under take_gil under PyEval_RestoreThread under gil_scoped_acquire, with inlined calls,
// then the caller.
constexpr size_t kWaitFrames = 28;
// Most waits show within this many frames: unwound deeper only when they do not.
constexpr size_t kFirstFrames = 6;
// Plain-Lock waiters whose lock's address is read (a DWARF unwind each) even with no with-block
// holding a lock: more, and only a with-block holding one makes the addresses worth reading.
constexpr size_t kLockObjectsAlways = 64;
// Unnamed glibc frames looked through on top of a wait (glibc 2.43's sem_clockwait: __syscall_cancel_arch,
// __internal_syscall_cancel, __futex_abstimed_wait_common, do_futex_wait) when glibc's symbols are missing.
constexpr size_t kUnnamedRuntimeFrames = 6;

bool isRuntimeModule(const std::string& module) {
    std::string name = baseName(module);
    for (const char* lib : {"libc.so", "libc-", "libpthread", "libstdc++", "libpython", "ld-linux"})
        if (name.rfind(lib, 0) == 0) return true;
    return false;
}

// The first frame that waits for its own reasons, not inside the lock's machinery: outside glibc,
// libstdc++ and libpython, not std::'s or pybind11's lock wrappers.
std::optional<size_t> callerFrame(const std::vector<NativeFrame>& frames, size_t from, const std::set<std::string>& cpython) {
    for (size_t i = from; i < frames.size(); ++i) {
        const NativeFrame& f = frames[i];
        if (isRuntimeModule(f.module) || cpython.count(f.module) || waitFunction(f.function).kind != WaitKind::None) continue;
        const std::string& fn = f.function;
        if (fn.empty() || fn.rfind("std::", 0) == 0 || fn.rfind("__gthread", 0) == 0 || fn.rfind("pybind11::", 0) == 0) continue;
        return i;
    }
    return std::nullopt;
}

struct Classified {
    WaitFunction wait;
    size_t frame = 0;
};

// Innermost first: a strong kind (the GIL, a lock, a join) anywhere in the run of wait functions
// that starts at the innermost frame; else the outermost weak one of that run (the condition
// variable under std::condition_variable::wait, "sleep" over clock_nanosleep). The run goes on
// through glibc's and CPython's own helpers (PyCOND_TIMEDWAIT inlined into take_gil), also when
// CPython is linked into the executable (Debian 13's python3.13).
std::optional<Classified> classify(const std::vector<NativeFrame>& frames, const std::set<std::string>& cpython) {
    std::optional<Classified> weak;
    bool named = false;  // a frame with a name seen: the run of unnamed runtime frames is over
    for (size_t i = 0; i < frames.size(); ++i) {
        // glibc's internal wait helpers have no symbol without its debug file (Debian's libc6-dbg):
        // 2.41+'s __syscall_cancel_arch, __futex_abstimed_wait_common, do_futex_wait. Unnamed frames
        // of the runtime's libraries on top of the stack are looked through: what the first named
        // frame beneath them waits for is what they wait in (a named non-wait frame: running).
        if (!named && frames[i].function.empty() && isRuntimeModule(frames[i].module) && !cpython.count(frames[i].module) &&
            i < kUnnamedRuntimeFrames && i + 1 < frames.size())
            continue;
        named = true;
        WaitFunction w = waitFunction(frames[i].function);
        // Dropping the GIL (3.x's forced switch waits for another thread to take it): no owner.
        if (bareFunctionName(frames[i].function) == "drop_gil") return Classified{{WaitKind::Condition, true, {}}, i};
        if (w.kind == WaitKind::None) {
            // take_gil inlined with no DWARF to show it: the function that takes the GIL for us.
            if (weak && takesGil(frames[i].function)) return Classified{{WaitKind::Gil, false, {}}, i};
            if (i == 0 || !weak) return std::nullopt;  // running: the innermost frame waits for nothing
            // The run may go on through an inlined helper or a libc internal without a wait name.
            if ((isRuntimeModule(frames[i].module) || cpython.count(frames[i].module)) && i + 1 < frames.size()) continue;
            return weak;
        }
        if (w.kind == WaitKind::PythonLock) {
            // stop_the_world waiting for its stop_event (PyEvent_WaitTimed, over the parking lot):
            // the other threads' detaching is what it waits for. Its PyMutex_Lock (another stop
            // under way) or HEAD_LOCK stays a Python lock's wait.
            bool event = false;
            for (size_t j = i; j < frames.size(); ++j) {
                if (waitsForStopEvent(frames[j].function)) event = true;
                else if (event && waitFunction(frames[j].function).kind == WaitKind::StopTheWorld)
                    return Classified{{WaitKind::StopTheWorld, false, {}}, j};
                else if (waitFunction(frames[j].function).kind != WaitKind::PythonLock) break;
                if (!isRuntimeModule(frames[j].module) && !cpython.count(frames[j].module)) break;
            }
        }
        if (!w.weak) return Classified{w, i};
        // A named syscall stays over an outer weak wait of another kind, except a condition variable.
        if (!weak || weak->wait.kind != WaitKind::Syscall || w.kind == WaitKind::Syscall || weak->wait.call.empty() ||
            w.kind == WaitKind::Condition)
            weak = Classified{w, i};
    }
    return weak;
}

std::optional<uint64_t> parameter(const NativeFrame& f, std::initializer_list<const char*> names) {
    for (const auto& v : f.values)
        if (v.kind == FrameValue::Kind::Parameter && v.value)
            for (const char* n : names)
                if (v.name == n) return v.value;
    return std::nullopt;
}

// A register of the innermost physical frame (its inlined calls come first and hold none).
std::optional<uint64_t> firstArgument(const std::vector<NativeFrame>& frames, const Arch& arch) {
    std::string name = arch.argumentRegister(0);
    for (const auto& f : frames) {
        for (const auto& v : f.values)
            if (v.kind == FrameValue::Kind::Register && v.name == name) return v.value;
        if (!f.inlined) break;
    }
    return std::nullopt;
}

// The object a wait function was handed: its DWARF parameter, in the frame or the inlined calls
// at its pc; failing that, the futex word the innermost frame's system call waits on (its first
// argument register: rdi, x0), when that word is the object's first.
std::optional<uint64_t> objectOf(const std::vector<NativeFrame>& frames, size_t index, std::initializer_list<const char*> names,
                                 bool futexIsObject, const Arch& arch) {
    for (size_t i = index; i < frames.size(); ++i) {
        if (auto v = parameter(frames[i], names)) return v;
        if (i > index && !frames[i].inlined && !frames[i - 1].inlined) break;
    }
    for (size_t i = index; i-- > 0;)
        if (auto v = parameter(frames[i], names)) return v;
    if (futexIsObject) return firstArgument(frames, arch);
    return std::nullopt;
}

// A map filled once, then only read, held as one sorted vector: a thousand threads' entries cost
// one allocation, not a thousand nodes.
template <typename Key, typename Value>
class FrozenMap {
public:
    void add(Key key, Value value) { entries_.emplace_back(key, value); }
    // After the last add(): of the values added for one key, the first is kept or the last.
    void freeze(bool firstWins) {
        std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.first < b.first; });
        std::vector<Entry> kept;
        kept.reserve(entries_.size());
        for (const auto& e : entries_) {
            if (kept.empty() || kept.back().first != e.first) kept.push_back(e);
            else if (!firstWins) kept.back() = e;
        }
        entries_ = std::move(kept);
    }
    const Value* find(Key key) const {
        auto it = std::lower_bound(entries_.begin(), entries_.end(), key, [](const Entry& e, Key k) { return e.first < k; });
        return it != entries_.end() && it->first == key ? &it->second : nullptr;
    }
    using Entry = std::pair<Key, Value>;
    const std::vector<Entry>& entries() const { return entries_; }

private:
    std::vector<Entry> entries_;
};

class WaitReader {
public:
    // withHeld: some thread's frame holds a Python lock by a with-block (commands/analysis/python_waits).
    WaitReader(const Target& target, NativeStacks& stacks, const ReportOptions& options, Report& report, bool withHeld)
        : target_(target), stacks_(stacks), options_(options), r_(report), withHeld_(withHeld) {
        for (const auto& t : target.threads()) {
            lwpOfPthread_.add(t.pthread, t.lwp);
            lwps_.add(t.lwp, true);
        }
        lwpOfPthread_.freeze(false);
        lwps_.freeze(true);
        // CPython's own module (libpython, or the executable it is linked into): its frames are
        // the interpreter's, not the code that waits.
        // Per thread state, once: a thousand threads must not each walk every list.
        for (const auto& rt : report.runtimes)
            for (const auto& interp : rt.interpreters) {
                if (!mainInterp_ && interp.main) mainInterp_ = &interp;
                for (const auto& ts : interp.tstates) {
                    interpOfTstate_.add(ts.address, &interp);
                    auto lwp = report.lwpFor(ts.address);
                    if (ts.attached()) attached_.push_back({&rt, &interp, ts.address, lwp.value_or(0)});
                    if (!lwp) continue;
                    runtimeOfLwp_.add(*lwp, &rt);
                    if (!ts.frames.empty()) pythonTop_.add(*lwp, &ts.frames.front());
                }
            }
        interpOfTstate_.freeze(false);
        runtimeOfLwp_.freeze(true);
        pythonTop_.freeze(true);
        for (const auto& rt : report.runtimes) {
            cpythonModules_.insert(rt.modulePath);
            for (const auto& interp : rt.interpreters)
                if (auto lwp = report.gilHolderLwp(interp)) gilHolders_.insert(*lwp);
        }
    }

    void run() {
        std::unordered_map<int, const OsThread*> threadOf;
        threadOf.reserve(target_.threads().size());
        for (const auto& t : target_.threads()) threadOf[t.lwp] = &t;  // the last of one LWP, as a scan found it
        for (auto& row : r_.threads) {
            auto thread = threadOf.find(row.lwp);
            if (thread == threadOf.end()) continue;
            row.blockedOn = readOne(*thread->second, row);
        }
        setCrashedThreadApart();
        // Whom a stop of the world waits for: the other attached threads, the blocked one first
        // (it is the one that keeps the world from stopping), once every thread's wait is known.
        std::vector<int> stopped;
        for (auto& row : r_.threads)
            if (row.blockedOn && row.blockedOn->kind == WaitKind::StopTheWorld) {
                stopTheWorld(row, *row.blockedOn);
                if (row.blockedOn->heldBy) stopped.push_back(*row.blockedOn->heldBy);
            }
        // The thread a stop waits for, read again with DWARF: where it blocks is the finding's.
        for (int lwp : stopped) detailed_.insert(lwp);
        for (auto& row : r_.threads) {
            if (!detailed_.count(row.lwp) || !row.blockedOn || row.blockedOn->kind == WaitKind::None ||
                row.blockedOn->kind == WaitKind::StopTheWorld)
                continue;
            auto thread = threadOf.find(row.lwp);
            if (thread != threadOf.end()) row.blockedOn = readOne(*thread->second, row);
        }
        // A plain Lock's address (its acquire's self, from DWARF) is read again for its waiters when
        // a with-block may name their holder, or when they are few: a thousand threads waiting on
        // one Event, with no with-block holding anything, cost no DWARF unwind each.
        std::vector<ThreadRow*> lockWaiters;
        for (auto& row : r_.threads)
            if (row.blockedOn && row.blockedOn->kind == WaitKind::PythonLock && !row.blockedOn->object &&
                row.blockedOn->function != "rlock_acquire")
                lockWaiters.push_back(&row);
        if (!lockWaiters.empty() && (withHeld_ || lockWaiters.size() <= kLockObjectsAlways || options_.native)) {
            lockObjects_ = true;
            for (ThreadRow* row : lockWaiters) {
                auto thread = threadOf.find(row->lwp);
                if (thread != threadOf.end()) row->blockedOn = readOne(*thread->second, *row);
            }
        } else if (!lockWaiters.empty()) {
            for (ThreadRow* row : lockWaiters)
                row->blockedOn->note = "a Lock: held, its owner is not recorded; its address is not read (" + std::to_string(lockWaiters.size()) +
                                       " threads wait on Python locks and no with-block holds one)";
        }
        // The GIL's waiters are in a finding only when its holder is blocked (a cycle, or the GIL
        // held while blocked): only then are they read again with DWARF, as the hang's frames.
        // A busy process, a thousand threads waiting for a running holder, loads no DWARF for it.
        bool holderBlocked = false;
        for (const auto& row : r_.threads)
            if (gilHolders_.count(row.lwp) && row.blockedOn && row.blockedOn->kind != WaitKind::None) holderBlocked = true;
        if (!holderBlocked) return;
        refineGilWaiters_ = true;
        for (auto& row : r_.threads) {
            if (!row.blockedOn || row.blockedOn->kind != WaitKind::Gil) continue;
            auto thread = threadOf.find(row.lwp);
            if (thread != threadOf.end()) row.blockedOn = readOne(*thread->second, row);
        }
    }

private:
    // A thread that faulted or aborted is not waiting, whatever wait function its stack was
    // entering: no cycle passes through it. What it was entering goes to the crash.
    void setCrashedThreadApart() {
        if (!r_.crash || !r_.crash->signal.raisedByThread(r_.target.pid)) return;
        for (auto& row : r_.threads) {
            if (row.lwp != r_.crash->signal.lwp || !row.blockedOn) continue;
            if (row.blockedOn->kind != WaitKind::None) r_.crash->entering = *row.blockedOn;
            row.blockedOn = BlockedOn{};
        }
    }

    BlockedOn readOne(const OsThread& thread, const ThreadRow& row) {
        BlockedOn b;
        // The innermost frame first, from the symbol tables: a thread whose innermost function
        // is no wait function runs (its own code, or the interpreter's) and needs no unwind.
        if (runs(thread)) return b;
        // Named from the symbol tables first (cheap for a thousand threads): the physical frames
        // the thread-state attribution has unwound already, else as deep as the wait shows.
        NativeStack stack;
        static const std::vector<StackSpan> kNone;
        const auto* unwound = stacks_.unwoundSpans(thread);
        const auto& spans = unwound ? *unwound : kNone;
        auto copySpans = [&](size_t n) {
            for (size_t i = stack.frames.size(); i < spans.size() && i < n; ++i) {
                NativeFrame f;
                f.pc = spans[i].pc;
                f.activation = spans[i].activation;
                f.function = spans[i].function;
                f.module = spans[i].module;
                stack.frames.push_back(std::move(f));
            }
        };
        size_t depth = kFirstFrames;
        copySpans(depth);
        // The frames read: those copied from the spans, or those firstFrames() keeps, or the DWARF pass's.
        const std::vector<NativeFrame>* frames = &stack.frames;
        if (stack.frames.empty()) frames = &stacks_.firstFrames(thread, depth);
        const Reading* reading = &readingOf(*frames, frames != &stack.frames);
        // A parking-lot wait may be a stop of the world further out (stop_the_world).
        if (frames->size() >= depth && (!reading->found || reading->found->wait.weak || reading->parked)) {
            depth = kWaitFrames;
            if (!spans.empty()) copySpans(depth);
            else frames = &stacks_.firstFrames(thread, depth);
            reading = &readingOf(*frames, frames != &stack.frames);
        }
        auto found = reading->found;
        if (!found) return inSyscallUnwound(thread, *frames, row, b);
        size_t valuesFrame = reading->rlock  ? reading->rlockFrame
                             : reading->lock ? reading->lockFrame
                             : reading->parkFrame ? *reading->parkFrame + 1
                                                  : found->frame;
        bool rlock = reading->rlock;
        // A plain Lock's acquire inlined out of the symbol tables' sight (Debian's 3.13: it and
        // _PyMutex_LockTimed inside method_vectorcall_VARARGS_KEYWORDS) still parks on the lock's
        // PyMutex: PyParkingLot_Park's address, read with DWARF, gives the lock.
        bool lockByPark = !reading->lock && reading->parkFrame.has_value();
        // A plain _thread.lock records no owner, but its address (lock_PyThread_acquire_lock's
        // self) is what a holder's with-block is matched against (commands/analysis/python_waits).
        bool owned = found->wait.kind == WaitKind::Mutex || found->wait.kind == WaitKind::Rwlock ||
                     found->wait.kind == WaitKind::Join || (found->wait.kind == WaitKind::PythonLock && (rlock || ((reading->lock || lockByPark) && lockObjects_)));
        // The threads a hang is made of (an owner to find, the GIL's holder) or --native: again with
        // DWARF, for inlined calls, source lines and the wait function's parameters; the frame
        // indexes are then those of --native.
        // A condition variable waited on from CPython's own code may be take_gil inlined out of
        // the symbol tables' sight.
        bool inCpython = found->wait.kind == WaitKind::Condition && found->frame + 1 < frames->size() &&
                         cpythonModules_.count((*frames)[found->frame + 1].module);
        if (owned || inCpython || (found->wait.kind == WaitKind::Gil && refineGilWaiters_) || gilHolders_.count(row.lwp) ||
            found->wait.kind == WaitKind::StopTheWorld || detailed_.count(row.lwp) || options_.native) {
            NativeStack detailed = stacks_.unwind(thread, kWaitFrames, owned ? valuesFrame + 2 : 0, true);
            if (auto again = classify(detailed.frames, cpythonModules_)) {
                stack = std::move(detailed);
                frames = &stack.frames;
                found = again;
                reading = nullptr;
            }
        }
        b.kind = found->wait.kind;
        b.function = (*frames)[found->frame].function;
        b.frame = found->frame;
        b.call = found->wait.call;
        callFromRegisters(thread, *frames, b);
        auto caller = reading ? reading->caller : callerFrame(*frames, found->frame + 1, cpythonModules_);
        if (caller) b.at = (*frames)[*caller];
        b.pythonAt = pythonFrameOf(row.lwp);
        switch (b.kind) {
            case WaitKind::Gil: gil(row, b); break;
            case WaitKind::Mutex: mutex(*frames, found->frame, b); break;
            case WaitKind::Rwlock: rwlock(*frames, found->frame, b); break;
            case WaitKind::Join: join(*frames, found->frame, b); break;
            case WaitKind::PythonLock: pythonLock(*frames, found->frame, row, reading && !reading->rlock, b); break;
            case WaitKind::StopTheWorld: stopFor(*frames, found->frame, row, b); break;
            default: break;
        }
        return b;
    }

    // A stack that ends at its innermost frame, unnamed in the C library (glibc 2.41+'s
    // __syscall_cancel_arch without its debug file), as a core without the thread's stack bytes
    // has it (gdb 13's gcore stops copying a mapping at the first page it cannot read: glibc 2.42's
    // MADV_GUARD_INSTALL guard under a thread's stack): the system call its registers hold
    // (orig_rax, x8) is what it is blocked in.
    BlockedOn inSyscallUnwound(const OsThread& thread, const std::vector<NativeFrame>& frames, const ThreadRow& row, BlockedOn& b) const {
        if (frames.size() != 1 || !frames.front().function.empty() || !isRuntimeModule(frames.front().module) || thread.syscall < 0)
            return b;
        std::string name = syscallName(target_.arch().machine, thread.syscall);
        if (name.empty()) return b;
        b.kind = name.rfind("futex", 0) == 0 ? WaitKind::Futex : WaitKind::Syscall;
        b.call = name;
        b.frame = 0;
        b.pythonAt = pythonFrameOf(row.lwp);
        b.note = "the system call in its registers: its stack is not unwound past frame #0";
        return b;
    }

    // What asked for the stop: the first CPython function past the stop's own (gc_collect_main,
    // _PyGC_ImmortalizeDeferredObjects, _PyEval_EnableGILTransient), and whether a thread state is
    // being made under it. Every interpreter's world: _PyEval_StopTheWorldAll, a caller DWARF shows
    // (a tail call).
    void stopFor(const std::vector<NativeFrame>& frames, size_t index, const ThreadRow& row, BlockedOn& b) {
        for (size_t i = index; i < frames.size(); ++i) {
            if (!cpythonModules_.count(frames[i].module)) break;
            const std::string& fn = frames[i].function;
            if (stopsEveryInterpreter(fn)) stopsAll_.insert(row.lwp);
            if (makesThreadState(fn)) b.makingThreadState = true;
            if (b.call.empty() && !fn.empty() && waitFunction(fn).kind != WaitKind::StopTheWorld) b.call = fn;
        }
    }

    // A stop of the world waits for every other thread state attached to its interpreter (to all
    // of them: _PyEval_StopTheWorldAll) to detach; detached ones it parks itself.
    void stopTheWorld(const ThreadRow& row, BlockedOn& b) {
        bool all = stopsAll_.count(row.lwp) != 0;
        const Interpreter* interp = interpreterOf(row);
        const Runtime* rt = runtimeOf(row);
        std::vector<const Attached*> waitedFor;
        for (const auto& a : attached_)
            if (a.lwp != row.lwp && a.tstate != row.currentTstate && (all ? a.runtime == rt : a.interp == interp)) waitedFor.push_back(&a);
        if (waitedFor.empty()) {
            b.note = "no other thread state is attached: the world is about to stop";
            return;
        }
        auto blocked = [&](int lwp) {
            for (const auto& other : r_.threads)
                if (other.lwp == lwp) return other.blockedOn && other.blockedOn->kind != WaitKind::None;
            return false;
        };
        // Named by the thread that runs it: a blocked one, else any; one run by no thread found
        // is only listed.
        auto first = std::find_if(waitedFor.begin(), waitedFor.end(), [&](const Attached* a) { return a->lwp && blocked(a->lwp); });
        if (first == waitedFor.end())
            first = std::find_if(waitedFor.begin(), waitedFor.end(), [](const Attached* a) { return a->lwp != 0; });
        if (first != waitedFor.end()) {
            b.heldBy = (*first)->lwp;
            b.object = (*first)->tstate;
            b.layoutSource = rt ? rt->layout.source : "";
        }
        if (waitedFor.size() > 1 || first == waitedFor.end()) {
            b.note = "attached, not yet detached:";
            for (size_t i = 0; i < waitedFor.size(); ++i) {
                const Attached& a = *waitedFor[i];
                b.note += i ? ", " : " ";
                b.note += a.lwp ? "LWP " + std::to_string(a.lwp) : "thread state " + hexAddress(a.tstate) + " (run by no thread found)";
            }
        }
    }

    // Whether the innermost function, from the symbol tables, is no wait function: the thread
    // runs (its own code, or the interpreter's). Once per pc.
    bool runs(const OsThread& thread) {
        auto known = runs_.find(thread.pc);
        if (known != runs_.end()) return known->second;
        auto top = stacks_.top(thread);
        bool running = !top.empty() && !top.front().function.empty() && waitFunction(top.front().function).kind == WaitKind::None;
        return runs_.emplace(thread.pc, running).first->second;
    }

    // What the symbol tables' frames say, read once per sequence of frames: threads parked in
    // one wait have the same pcs, and this reads no more than their names and modules, which the
    // pcs decide.
    struct Reading {
        std::optional<Classified> found;
        // Only an RLock records its owner: a plain Lock (every Event, Condition, queue) has none.
        bool rlock = false;
        size_t rlockFrame = 0;
        bool lock = false;  // a plain _thread.lock's acquire (lock_PyThread_acquire_lock): its self is the lock
        size_t lockFrame = 0;
        std::optional<size_t> caller;  // callerFrame() past the wait function
        bool parked = false;           // a Python lock's wait in the parking lot (parksInCpython)
        std::optional<size_t> parkFrame;  // PyParkingLot_Park's frame, when parked
    };
    // kept: the list is one NativeStacks::firstFrames() keeps (at one address for the run), whose
    // reading is then found by that address, not by its pcs again.
    const Reading& readingOf(const std::vector<NativeFrame>& frames, bool kept = false) {
        if (kept) {
            auto seen = readingOfKept_.find(&frames);
            if (seen != readingOfKept_.end()) return *seen->second;
            const Reading& r = readingOf(frames);
            readingOfKept_.emplace(&frames, &r);
            return r;
        }
        std::vector<uint64_t> key;
        key.reserve(frames.size());
        for (const auto& f : frames) key.push_back(f.activation ? f.pc : ~f.pc);
        auto known = readings_.find(key);
        if (known != readings_.end()) return known->second;
        Reading r;
        r.found = classify(frames, cpythonModules_);
        if (r.found) {
            // The symbol tables' stack has one frame per physical frame: the wait function's
            // values (its parameters) come from that many physical frames, and the next (its caller's).
            for (size_t i = 0; i < frames.size(); ++i)
                if (bareFunctionName(frames[i].function) == "rlock_acquire") {
                    r.rlock = true;
                    r.rlockFrame = i;
                    break;
                } else if (!r.lock && acquiresPlainLock(frames[i].function)) {
                    r.lock = true;
                    r.lockFrame = i;
                }
            r.caller = callerFrame(frames, r.found->frame + 1, cpythonModules_);
            r.parked = r.found->wait.kind == WaitKind::PythonLock && parksInCpython(frames[r.found->frame].function);
            for (size_t i = r.found->frame; r.parked && i < frames.size(); ++i)
                if (bareFunctionName(frames[i].function) == "PyParkingLot_Park") {
                    r.parkFrame = i;
                    break;
                }
        }
        return readings_.emplace(std::move(key), std::move(r)).first->second;
    }

    // A generic entry innermost (glibc 2.41's __syscall_cancel_arch under a wrapper we do not
    // name, syscall()) says no call: the number in the thread's registers does (orig_rax, x8).
    void callFromRegisters(const OsThread& thread, const std::vector<NativeFrame>& frames, BlockedOn& b) const {
        if ((b.kind != WaitKind::Futex && b.kind != WaitKind::Syscall) || !b.call.empty() || frames.empty() || thread.syscall < 0) return;
        std::string entry = bareFunctionName(frames.front().function);
        if (entry != "syscall_cancel_arch" && entry != "syscall") return;
        // Futex kind from the entry's own name only: a futex function further out says futex itself.
        if (b.kind == WaitKind::Futex && bareFunctionName(b.function).rfind("futex", 0) == 0) return;
        std::string name = syscallName(target_.arch().machine, thread.syscall);
        b.kind = name.rfind("futex", 0) == 0 ? WaitKind::Futex : WaitKind::Syscall;
        b.call = name;
    }

    std::optional<PyFrame> pythonFrameOf(int lwp) const {
        auto top = pythonTop_.find(lwp);
        if (!top) return std::nullopt;
        return **top;
    }

    // The interpreter this thread runs in: its current thread state's, else the main one.
    const Interpreter* interpreterOf(const ThreadRow& row) const {
        for (uint64_t ts : {row.currentTstate, row.autotssTstate}) {
            auto interp = interpOfTstate_.find(ts);
            if (ts && interp) return *interp;
        }
        return mainInterp_;
    }

    void gil(const ThreadRow& row, BlockedOn& b) {
        const Interpreter* interp = interpreterOf(row);
        if (!interp || !interp->gilKnown) {
            b.note = "the GIL's holder is unknown";
            return;
        }
        if (!interp->gilHolder) {
            b.gilFree = true;
            b.note = "the GIL is free: the thread is about to take it";
            return;
        }
        b.gilHolder = interp->gilHolder;
        b.heldBy = r_.gilHolderLwp(*interp);
        if (!b.heldBy) b.note = "the GIL is held by thread state " + hexAddress(interp->gilHolder) + ", which no thread is found to run";
    }

    const LockLayout& glibc() {
        if (!glibc_) glibc_ = glibcLockLayout(target_, options_.useDwarf);
        return *glibc_;
    }

    void ownerTid(uint64_t field, BlockedOn& b, const char* nobody) {
        auto tid = target_.readValue<int32_t>(field);
        b.ownerReadLate = target_.readLate(field, sizeof(int32_t));
        if (!tid) {
            b.note = "its owner field at " + hexAddress(field) + " is unreadable";
            return;
        }
        // A robust mutex whose owner died holds FUTEX_OWNER_DIED; the TID is the low 30 bits.
        int owner = *tid & 0x3fffffff;
        if (owner == 0) b.note = nobody;
        else if (lwps_.find(owner)) b.heldBy = owner;
        else b.note = "held by TID " + std::to_string(owner) + ", which is not a thread of this process";
    }

    void mutex(const std::vector<NativeFrame>& frames, size_t index, BlockedOn& b) {
        // The futex word is the mutex's first (__lock) when the system call is glibc's lock wait.
        bool lowLevel = false;
        for (size_t i = 0; i <= index && i < frames.size(); ++i)
            lowLevel = lowLevel || frames[i].function.find("lll_lock_wait") != std::string::npos ||
                       frames[i].function.find("futex_lock_pi") != std::string::npos;
        auto object = objectOf(frames, index, {"mutex", "futex"}, lowLevel, target_.arch());
        if (!object) {
            b.note = "the mutex's address is not in the frame (no DWARF for " + frames[index].function + ")";
            return;
        }
        b.object = *object;
        b.layoutSource = glibc().source;
        ownerTid(*object + glibc().mutexOwner, b, "no owner recorded (a mutex being released)");
    }

    void rwlock(const std::vector<NativeFrame>& frames, size_t index, BlockedOn& b) {
        auto object = objectOf(frames, index, {"rwlock"}, false, target_.arch());
        if (!object) {
            b.note = "the rwlock's address is not in the frame (no DWARF for " + frames[index].function + ")";
            return;
        }
        b.object = *object;
        b.layoutSource = glibc().source;
        ownerTid(*object + glibc().rwlockCurWriter, b, "held for reading (readers are not recorded) or being released");
    }

    void join(const std::vector<NativeFrame>& frames, size_t index, BlockedOn& b) {
        auto object = objectOf(frames, index, {"threadid", "pd"}, false, target_.arch());
        if (object) {
            b.object = *object;
            if (auto lwp = lwpOfPthread_.find(*object)) b.heldBy = *lwp;
            else b.note = "the joined thread " + hexAddress(*object) + " is not among the process's threads";
            return;
        }
        // glibc waits on the joined thread's tid field: the futex word holds its TID.
        if (auto futex = firstArgument(frames, target_.arch())) {
            if (auto tid = target_.readValue<int32_t>(*futex); tid && lwps_.find(*tid)) {
                b.ownerReadLate = target_.readLate(*futex, sizeof(int32_t));
                b.heldBy = *tid;
                for (const auto& [pthread, lwp] : lwpOfPthread_.entries())  // the highest, should two name it
                    if (lwp == *tid) b.object = pthread;
                return;
            }
        }
        b.note = "the joined thread is not in the frame (no DWARF for " + frames[index].function + ")";
    }

    // noRlock: the frames are known to hold no rlock_acquire (their Reading).
    void pythonLock(const std::vector<NativeFrame>& frames, size_t index, const ThreadRow& row, bool noRlock, BlockedOn& b) {
        // threading.RLock: rlock_acquire's self records the owner.
        for (size_t i = index; !noRlock && i < frames.size(); ++i) {
            if (bareFunctionName(frames[i].function) != "rlock_acquire") continue;
            b.function = "rlock_acquire";
            b.frame = i;
            auto self = parameter(frames[i], {"self"});
            if (!self) {
                b.note = "an RLock whose address is not in the frame";
                return;
            }
            b.object = *self;
            const Runtime* rt = runtimeOf(row);
            if (!rt) return;
            RLockLayout layout = rlockLayout(target_, *rt, options_.useDwarf);
            b.layoutSource = layout.source;
            auto owner = rlockOwner(target_, *self, layout);
            b.ownerReadLate = rlockOwnerReadLate(target_, *self, layout);
            if (!owner) {
                b.note = "the RLock's owner is unreadable (" + layout.source + ")";
                return;
            }
            const int* lwp = lwpOfPthread_.find(*owner);
            if (*owner == 0) b.note = "the RLock is free: the thread is about to take it";
            else if (lwp) b.heldBy = *lwp;
            else b.note = "the RLock's owner " + hexAddress(*owner) + " is not a thread of this process";
            return;
        }
        // threading.Lock (and the lock under a Condition, Semaphore, Event, Queue, join):
        // lock_PyThread_acquire_lock's self is the lock. Who holds it no field says: a holder's
        // with-block may (commands/analysis/python_waits).
        std::optional<uint64_t> parked;  // the parking lot's address: the lock's PyMutex (3.13+)
        for (size_t i = index; i < frames.size(); ++i) {
            if (bareFunctionName(frames[i].function) == "PyParkingLot_Park" && !parked) parked = parameter(frames[i], {"addr"});
            if (!acquiresPlainLock(frames[i].function)) continue;
            // 3.13.1+: the PyMutex it parks on is in the object. Its address (a direct call's argument)
            // is trusted over self: 3.14 names self op and GCC keeps it nowhere, and 3.15's clinic
            // functions called through method_vectorcall_NOARGS's tail call give self an entry value
            // that is the caller's callable.
            if (const Runtime* rt = parked ? runtimeOf(row) : nullptr)
                if (auto offset = lockMutexOffset(target_, *rt, options_.useDwarf))
                    if (*parked > static_cast<uint64_t>(*offset)) b.object = *parked - static_cast<uint64_t>(*offset);
            for (size_t j = i; !b.object && j < frames.size() && acquiresPlainLock(frames[j].function); ++j)
                if (auto self = parameter(frames[j], {"self", "op"})) b.object = *self;
            break;
        }
        b.note = b.object ? "a Lock: held, its owner is not recorded" : "a Lock or PyMutex: held, its owner is not recorded";
    }

    const Runtime* runtimeOf(const ThreadRow& row) const {
        if (auto rt = runtimeOfLwp_.find(row.lwp)) return *rt;
        return r_.runtimes.empty() ? nullptr : &r_.runtimes.front();
    }

    const Target& target_;
    NativeStacks& stacks_;
    const ReportOptions& options_;
    Report& r_;
    FrozenMap<uint64_t, int> lwpOfPthread_;
    FrozenMap<int, bool> lwps_;
    std::set<std::string> cpythonModules_;
    std::set<int> gilHolders_;
    bool refineGilWaiters_ = false;  // set once a GIL holder is found blocked (run())
    bool withHeld_ = false;          // a frame holds a Python lock by a with-block
    bool lockObjects_ = false;       // plain Locks' waiters are read with DWARF for the lock's address (run())
    FrozenMap<int, const PyFrame*> pythonTop_;  // LWP -> its innermost Python frame (in the report)
    FrozenMap<uint64_t, const Interpreter*> interpOfTstate_;
    FrozenMap<int, const Runtime*> runtimeOfLwp_;
    const Interpreter* mainInterp_ = nullptr;
    // Thread states attached (3.13+ PyThreadState.state) and the thread that runs each.
    struct Attached {
        const Runtime* runtime;
        const Interpreter* interp;
        uint64_t tstate;
        int lwp;  // 0: no thread found that runs it
    };
    std::vector<Attached> attached_;
    std::set<int> stopsAll_;  // the threads whose stop is _PyEval_StopTheWorldAll's
    std::set<int> detailed_;  // threads a stop of the world waits for: read with DWARF
    std::optional<LockLayout> glibc_;
    std::unordered_map<uint64_t, bool> runs_;                               // by the innermost pc
    std::map<std::vector<uint64_t>, Reading> readings_;  // by the frames' pcs
    std::unordered_map<const std::vector<NativeFrame>*, const Reading*> readingOfKept_;  // by firstFrames()' list
};

}  // namespace

void readWaits(const Target& target, NativeStacks& stacks, const ReportOptions& options, Report& report) {
    if (!options.waits) return;
    if (!stacks.unavailable().empty()) {
        report.waitNotes.push_back("what each thread waits for is unknown: " + stacks.unavailable());
        return;
    }
    report.waitsRead = true;
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters)
            if (interp.gilDisabled)
                report.waitNotes.push_back("CPython " + rt.version + " runs without a GIL (free-threaded): no thread waits for one");
    PythonWaits python(target, options, report);
    WaitReader(target, stacks, options, report, python.anyHeld()).run();
    python.run();
}

}  // namespace pytstates
