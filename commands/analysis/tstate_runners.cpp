// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/tstate_runners.h"

#include <algorithm>
#include <map>
#include <set>

#include "symbols/cpython/frames.h"

namespace pytstates {

namespace {

constexpr uint64_t kRedZone = 128;                  // x86_64's red zone below sp: a leaf's locals
constexpr uint64_t kMaxStackScan = 1 << 20;         // bytes of one thread's live frames searched for words
constexpr uint64_t kUnwoundFallback = uint64_t{256} * 1024;  // the stack's extent when it cannot be unwound
constexpr uint64_t kMaxStackTop = uint64_t{64} << 20;        // farther above sp, struct pthread is not the stack's top
constexpr uint64_t kUnknownTop = uint64_t{8} << 20;          // the extent when nothing bounds it (the main thread)

// One thread's stack. Two extents: `top`, from the registers alone (glibc puts struct pthread,
// and the thread pointer, just above a thread's stack), where the running structures of a state
// (its cframe, its entry frame) are looked for; and, only for the threads that need it, the live
// frames as the unwinder found them (to the outermost frame), searched for words.
struct StackRange {
    const OsThread* thread = nullptr;
    int lwp = 0;
    uint64_t sp = 0;
    uint64_t low = 0, top = 0;
    bool unwound = false;
    uint64_t high = 0;    // unwound: the outermost frame's sp (else the fallback extent)
    bool python = false;  // unwound: an eval-loop frame is on its stack
    bool cutShort = false;  // unwound: the frames stop before the stack's end (some may be unseen)
    bool contains(uint64_t a) const { return a >= low && a < top; }
};

std::vector<StackRange> stackRanges(const Target& target) {
    std::vector<StackRange> out;
    for (const auto& t : target.threads()) {
        if (!t.sp) continue;
        StackRange r;
        r.thread = &t;
        r.lwp = t.lwp;
        r.sp = t.sp;
        r.low = t.sp > kRedZone ? t.sp - kRedZone : 0;
        for (uint64_t above : {t.pthread, t.threadPointer})
            if (above > t.sp && above - t.sp <= kMaxStackTop && (!r.top || above < r.top)) r.top = above;
        if (!r.top) r.top = t.sp + kUnknownTop;
        out.push_back(r);
    }
    // Stacks do not overlap: a range stops at the next thread's stack (the lowest start above its own).
    std::vector<uint64_t> lows;
    lows.reserve(out.size());
    for (const auto& r : out) lows.push_back(r.low);
    std::sort(lows.begin(), lows.end());
    for (auto& r : out) {
        auto next = std::upper_bound(lows.begin(), lows.end(), r.low);
        if (next != lows.end() && *next < r.top) r.top = *next;
    }
    return out;
}

// The live frames of one thread, unwound on first need: where they end, whether Python runs there.
void unwindRange(StackRange& r, NativeStacks* stacks, const std::vector<StackRange>& all) {
    if (r.unwound) return;
    r.unwound = true;
    r.high = 0;
    if (stacks)
        for (const auto& span : stacks->spans(*r.thread)) {
            r.high = std::max(r.high, span.sp);
            r.python = r.python || isEvalLoopFunction(span.function);
        }
    r.cutShort = stacks && stacks->spansCutShort(*r.thread);
    // An unwind cut short says nothing of where the frames end: the older ones are searched too.
    if (r.high <= r.sp || r.cutShort) r.high = std::max(r.high, r.sp + kUnwoundFallback);
    // Never past the stack's top: above it lie struct pthread and its pthread_key values
    // (PyGILState's autoTSSkey slot among them), no frame's words.
    r.high = std::min(r.high, r.top);
    for (const auto& o : all)
        if (o.lwp != r.lwp && o.low > r.low && o.low < r.high) r.high = o.low;
}

const StackRange* rangeHolding(const std::vector<StackRange>& ranges, uint64_t address) {
    for (const auto& r : ranges)
        if (r.contains(address)) return &r;
    return nullptr;
}

struct Claim {
    int lwp = 0;
    std::string evidence;
    uint64_t depth = 0;
    int rank = 0;  // lower is better
};

// The thread whose stack holds the state's running structures: its cframe (3.10-3.12) or one of
// its entry frames (3.12+: the entry frame is a local of the eval loop). Only those: the other
// frames live in the state's data stack chunks, mmap'ed memory that can lie inside a range (the
// main thread's runs up to its struct pthread; under qemu the chunks were mapped in between, and
// every state was put on the main thread).
std::optional<Claim> structuralClaim(const FrameReader& frames, uint64_t tstate, const std::vector<StackRange>& ranges) {
    if (uint64_t cframe = frames.runningCframe(tstate))
        if (const auto* r = rangeHolding(ranges, cframe)) return Claim{r->lwp, "cframe", cframe - r->low, 1};
    if (!frames.entryFramesOnStack()) return std::nullopt;
    std::optional<Claim> found;
    frames.chain(tstate, [&](uint64_t frame) {
        if (!frames.ownedByCStackOrInterpreter(frame)) return true;
        if (const auto* r = rangeHolding(ranges, frame)) found = Claim{r->lwp, "entry_frame", frame - r->low, 2};
        return !found;
    });
    return found;
}

// The frames of a state's Python stack (PyFrameObjects <= 3.10, interpreter frames 3.11+), from
// its innermost through previous/f_back.
std::set<uint64_t> frameChain(const FrameReader& frames, uint64_t tstate) {
    std::set<uint64_t> out;
    frames.chain(tstate, [&](uint64_t frame) {
        out.insert(frame);
        return true;
    });
    return out;
}

}  // namespace

std::string runnerEvidenceWords(const std::string& evidence) {
    if (evidence == "current") return "CPython's current thread state of that thread";
    if (evidence == "current_python")
        return "gilstate.tstate_current, on the one thread that runs Python and no other thread state (no frame of any thread names it)";
    if (evidence == "current_maker") return "gilstate.tstate_current, on the thread that made it (no frame of any thread names it)";
    if (evidence == "cframe") return "its cframe is on that thread's stack";
    if (evidence == "eval_argument") return "an eval loop on that thread's stack was handed one of its frames (DWARF)";
    if (evidence == "entry_frame") return "its interpreter frames are on that thread's stack";
    if (evidence == "register") return "a register of that thread holds it";
    if (evidence == "stack_word") return "a live frame of that thread holds it";
    if (evidence == "maker_unverified") return "the thread that made it; its stack could not be read to verify";
    if (evidence == "unknown")
        return "gilstate.tstate_current: it runs, but no frame of any thread names it and the thread running Python is not known "
               "(a stack could not be unwound to its end, or several threads run Python and no other state)";
    return evidence;
}

void attributeRunners(const Target& target, NativeStacks* stacks, Report& report) {
    std::map<uint64_t, int> lwpOfPthread;
    // native_thread_id is gettid() in the process's own PID namespace; a live process in another
    // namespace is read by its ids here: compare in the process's view, report in ours.
    std::map<int64_t, int> lwpOfOwnTid;
    for (const auto& t : target.threads()) {
        lwpOfPthread[t.pthread] = t.lwp;
        lwpOfOwnTid[t.namespaceLwp ? t.namespaceLwp : t.lwp] = t.lwp;
    }
    // Who made each state; the frame reader of its runtime.
    std::vector<FrameReader> readers;
    readers.reserve(report.runtimes.size());  // readerOf points into it
    std::map<uint64_t, const FrameReader*> readerOf;
    for (const auto& rt : report.runtimes) {
        readers.emplace_back(target, rt.layout);
        for (const auto& interp : rt.interpreters)
            for (const auto& ts : interp.tstates) {
                report.listedTstates.insert(ts.address);
                readerOf[ts.address] = &readers.back();
                TstatePlace& place = report.places[ts.address];
                auto it = ts.threadId ? lwpOfPthread.find(ts.threadId) : lwpOfPthread.end();
                auto native = ts.nativeThreadId ? lwpOfOwnTid.find(*ts.nativeThreadId) : lwpOfOwnTid.end();
                bool nativeExists = native != lwpOfOwnTid.end();
                if (it != lwpOfPthread.end()) {
                    place.madeBy = it->second;
                    // A child of fork keeps the forking thread's struct pthread: the same
                    // thread_id with a native_thread_id of no thread here was made in the parent.
                    if (ts.nativeThreadId && !nativeExists) {
                        place.madeBy.reset();
                        place.madeBeforeFork = true;
                    }
                } else if (nativeExists) {
                    place.madeBy = native->second;
                }
            }
    }

    std::map<uint64_t, Claim> best;
    auto claim = [&](uint64_t tstate, const Claim& c) {
        auto it = best.find(tstate);
        if (it == best.end() || c.rank < it->second.rank) best[tstate] = c;
    };
    // 3.12+: each thread's own current thread state.
    for (const auto& row : report.threads)
        if (row.currentTstate && row.currentSource == "_Py_tss_tstate" && report.listed(row.currentTstate))
            claim(row.currentTstate, {row.lwp, "current", 0, 0});

    auto ranges = stackRanges(target);
    for (const auto& [tstate, frames] : readerOf)
        if (auto c = structuralClaim(*frames, tstate, ranges)) claim(tstate, *c);

    // What follows needs the threads' frames: only the threads no evidence above placed a state
    // on are unwound and searched, and only while a state is left to place (the cost of a check of
    // a thousand threads is there).
    std::set<int> placed;  // threads stronger evidence placed a state on
    for (const auto& [tstate, c] : best) placed.insert(c.lwp);
    bool statesLeft = false;
    for (const auto& [tstate, frames] : readerOf) statesLeft = statesLeft || !best.count(tstate);
    std::vector<StackRange*> open;  // the threads left, when a state is left
    if (statesLeft)
        for (auto& r : ranges)
            if (!placed.count(r.lwp)) open.push_back(&r);
    auto runsPython = [&](StackRange* r) {
        if (!r) return false;
        unwindRange(*r, stacks, ranges);
        return r->python;
    };
    auto rangeOf = [&](int lwp) -> StackRange* {
        for (StackRange* r : open)
            if (r->lwp == lwp) return r;
        return nullptr;
    };

    // The eval loop's arguments (DWARF at each _PyEval_EvalFrameDefault frame's pc): the one state
    // whose Python stack holds the frame it was handed. Its `tstate` argument alone is not taken:
    // release builds optimize it out at most calls, and where a location list still names a
    // register, that register may since hold something else (pyenv's 3.12.1 and Debian's 3.14 read
    // pointers into libpython's data there; gdb shows tstate=0x1 on pyenv's 3.13.0).
    std::map<uint64_t, std::set<uint64_t>> chains;  // listed state -> its Python frames, read on first need
    auto chainOf = [&](uint64_t tstate) -> const std::set<uint64_t>& {
        auto it = chains.find(tstate);
        if (it == chains.end()) it = chains.emplace(tstate, frameChain(*readerOf.at(tstate), tstate)).first;
        return it->second;
    };
    for (StackRange* r : open) {
        if (!stacks || placed.count(r->lwp) || !runsPython(r)) continue;
        bool any = false;
        for (const auto& a : stacks->evalArguments(*r->thread)) {
            if (!a.frame) continue;
            std::optional<uint64_t> state;
            bool twice = false;  // two states' stacks hold it: neither is told
            for (const auto& [t, frames] : readerOf)
                if (chainOf(t).count(*a.frame)) {
                    twice = twice || state.has_value();
                    state = t;
                }
            if (!state || twice || best.count(*state)) continue;
            claim(*state, {r->lwp, "eval_argument", a.sp > r->low ? a.sp - r->low : 0, 3});
            any = true;
        }
        if (any) placed.insert(r->lwp);
    }

    // Words. A live frame may still hold a stale copy from an earlier, deeper call (printf's
    // arguments, a previous request's state): a state held by one thread is that thread's; held by
    // several, it goes to the one running Python (an eval-loop frame on its stack), else to its
    // maker among them, else to none. A thread takes the outermost state it holds: stale copies
    // lie nearer the stack pointer, where shorter calls reuse the space. A thread placed above
    // runs its state: what its frames hold is not read.
    std::map<int, std::map<uint64_t, uint64_t>> wordsOf;  // lwp -> state -> its outermost offset
    std::map<uint64_t, std::set<int>> holders;
    for (StackRange* r : open) {
        auto& mine = wordsOf[r->lwp];
        for (uint64_t v : r->thread->registers)
            if (report.listed(v)) mine.emplace(v, 0);
        unwindRange(*r, stacks, ranges);
        uint64_t from = r->sp, to = std::min(r->high, r->sp + kMaxStackScan);
        std::vector<uint64_t> words(to > from ? (to - from) / 8 : 0);
        size_t got = words.empty() ? 0 : target.read(from, words.data(), words.size() * 8) / 8;
        for (size_t w = 0; w < got; ++w)
            if (report.listed(words[w])) mine[words[w]] = 8 + w * 8;
        for (const auto& [state, offset] : mine) holders[state].insert(r->lwp);
    }
    // Each thread's PyGILState slot, where it was read: a thread that made a state for itself
    // (PyGILState_Ensure, or PyThreadState_New with its slot empty) has it filed there.
    std::map<int, uint64_t> slotOf;
    for (const auto& row : report.threads)
        if (!row.autotssStatus.empty()) slotOf[row.lwp] = row.autotssTstate;
    // On a thread running no Python, a word counts only for a state that thread made: a pointer
    // to another thread's state left in its frames (an argument passed on, a copy) is no sign of
    // running it.
    auto owner = [&](uint64_t state) -> std::optional<int> {
        const auto& h = holders[state];
        auto maker = report.places[state].madeBy;
        std::optional<int> lwp;
        std::vector<int> python;
        for (int l : h)
            if (runsPython(rangeOf(l))) python.push_back(l);
        if (h.size() == 1) lwp = *h.begin();
        else if (python.size() == 1) lwp = python.front();
        else if (maker && h.count(*maker)) lwp = maker;
        if (lwp && !runsPython(rangeOf(*lwp)) && maker != lwp) return std::nullopt;
        // Nor for a state it made for others (a pool's owner keeps them in its locals): made by
        // it, not in its own slot, where the slot names another.
        if (lwp && !runsPython(rangeOf(*lwp))) {
            auto slot = slotOf.find(*lwp);
            if (slot != slotOf.end() && slot->second && slot->second != state) return std::nullopt;
        }
        return lwp;
    };
    // <= 3.11: the process-wide current pointer is the GIL holder's, on the thread holding it.
    for (const auto& rt : report.runtimes) {
        uint64_t current = rt.tstateCurrent;
        if (!current || !report.listed(current) || best.count(current)) continue;
        if (auto lwp = owner(current); lwp && !placed.count(*lwp)) {
            claim(current, {*lwp, "current", 0, 3});
            placed.insert(*lwp);
        }
    }
    for (StackRange* r : open) {
        if (placed.count(r->lwp)) continue;
        std::optional<std::pair<uint64_t, uint64_t>> outermost;  // (offset, state)
        for (const auto& [state, offset] : wordsOf[r->lwp])
            if (!best.count(state) && owner(state) == r->lwp && (!outermost || offset > outermost->first))
                outermost = std::make_pair(offset, state);
        if (outermost)
            claim(outermost->second, {r->lwp, outermost->first ? "stack_word" : "register", outermost->first, 4});
    }

    // <= 3.11: the process-wide current pointer belongs to the thread that runs it.
    for (const auto& rt : report.runtimes) {
        if (!rt.tstateCurrent || !report.listed(rt.tstateCurrent)) continue;
        auto it = best.find(rt.tstateCurrent);
        std::optional<int> runner;
        if (it != best.end()) runner = it->second.lwp;
        else {
            // No frame names it (the eval loop may hold it in no register at this instant). The GIL's
            // holder runs Python: one thread that runs Python and no other state is it. Only then the
            // maker, which a fork or a hand-over may have left behind, when no thread does. A thread
            // whose stack could not be unwound to its end may run Python unseen: then neither is
            // known, and the state is said to run on a thread not found rather than guessed.
            std::set<int> running;
            for (const auto& [state, c] : best) running.insert(c.lwp);
            std::vector<int> candidates;
            bool unseen = false;
            for (StackRange* r : open) {
                if (running.count(r->lwp)) continue;
                if (runsPython(r)) candidates.push_back(r->lwp);
                else if (r->cutShort) unseen = true;
            }
            auto maker = report.places[rt.tstateCurrent].madeBy;
            if (candidates.size() == 1 && !unseen) {
                runner = candidates.front();
                best[rt.tstateCurrent] = {*runner, "current_python", 0, 5};
            } else if (candidates.empty() && !unseen && maker) {
                runner = maker;
                best[rt.tstateCurrent] = {*maker, "current_maker", 0, 5};
            } else if (!candidates.empty() || unseen) {
                report.places[rt.tstateCurrent].runnerUnknown = true;
            }
        }
        for (auto& row : report.threads) {
            if (row.currentSource != "gilstate.tstate_current") continue;
            if (runner && row.lwp == *runner) row.currentTstate = rt.tstateCurrent;
            else if (row.currentTstate == rt.tstateCurrent) row.currentTstate = 0;
        }
        if (it != best.end()) it->second.depth = 0;  // the GIL holder's current state is its innermost
    }

    // A thread whose stack cannot be read (--no-stop: no registers) gives no evidence either way:
    // its maker is taken for a state none placed, and said to be unverified.
    std::set<int> unreadable;
    for (const auto& t : target.threads())
        if (!t.sp) unreadable.insert(t.lwp);
    for (const auto& [tstate, frames] : readerOf) {
        auto maker = report.places[tstate].madeBy;
        if (!best.count(tstate) && maker && unreadable.count(*maker)) best[tstate] = {*maker, "maker_unverified", 1 << 30, 6};
    }

    for (const auto& [tstate, c] : best) {
        TstatePlace& place = report.places[tstate];
        place.lwp = c.lwp;
        place.evidence = c.evidence;
        place.depth = c.depth;
    }
}

}  // namespace pytstates
