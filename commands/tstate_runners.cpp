#include "commands/tstate_runners.h"

#include <algorithm>
#include <map>
#include <set>

namespace pytstates {

namespace {

constexpr uint64_t kRedZone = 128;                  // x86_64's red zone below sp: a leaf's locals
constexpr uint64_t kMaxStackScan = 1 << 20;         // bytes of one thread's live frames searched for words
constexpr uint64_t kUnwoundFallback = 256 * 1024;   // the stack's extent when it cannot be unwound
constexpr size_t kMaxFrameWalk = 4096;
constexpr uint64_t kInsideState = 0x4000;           // root_cframe and the like lie within the state itself

// The live part of one thread's stack: from below its sp to its outermost unwound frame.
struct StackRange {
    int lwp = 0;
    uint64_t low = 0, high = 0;
    std::vector<uint64_t> registers;
    bool contains(uint64_t a) const { return a >= low && a < high; }
};

std::vector<StackRange> stackRanges(const Target& target, NativeStacks* stacks) {
    std::vector<StackRange> out;
    for (const auto& t : target.threads()) {
        if (!t.sp) continue;
        StackRange r;
        r.lwp = t.lwp;
        r.low = t.sp > kRedZone ? t.sp - kRedZone : 0;
        r.high = 0;
        if (stacks)
            for (const auto& span : stacks->spans(t)) r.high = std::max(r.high, span.sp);
        if (r.high <= t.sp) r.high = t.sp + kUnwoundFallback;
        r.registers = t.registers;
        out.push_back(r);
    }
    // Without an unwound extent a range stops at the next thread's stack: stacks do not overlap.
    for (auto& r : out)
        for (const auto& o : out)
            if (o.lwp != r.lwp && o.low > r.low && o.low < r.high) r.high = o.low;
    return out;
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
// its interpreter frames (3.12+: the entry frame is a local of the eval loop).
std::optional<Claim> structuralClaim(const Target& target, const CPythonLayout& l, uint64_t tstate,
                                     const std::vector<StackRange>& ranges) {
    if (l.tstateCframe != kAbsent) {
        uint64_t cframe = target.readPointer(tstate + l.tstateCframe).value_or(0);
        bool inside = cframe >= tstate && cframe < tstate + kInsideState;
        if (cframe && !inside)
            if (const auto* r = rangeHolding(ranges, cframe)) return Claim{r->lwp, "cframe", cframe - r->low, 1};
    }
    if (l.minor < 12 || l.framePrevious == kAbsent) return std::nullopt;
    uint64_t frame = 0;
    if (l.tstateCurrentFrame != kAbsent) {
        frame = target.readPointer(tstate + l.tstateCurrentFrame).value_or(0);
    } else if (l.tstateCframe != kAbsent && l.cframeCurrentFrame != kAbsent) {
        uint64_t cframe = target.readPointer(tstate + l.tstateCframe).value_or(0);
        if (cframe) frame = target.readPointer(cframe + l.cframeCurrentFrame).value_or(0);
    }
    std::set<uint64_t> seen;
    for (size_t i = 0; frame && i < kMaxFrameWalk && seen.insert(frame).second; ++i) {
        if (const auto* r = rangeHolding(ranges, frame)) return Claim{r->lwp, "entry_frame", frame - r->low, 2};
        frame = target.readPointer(frame + l.framePrevious).value_or(0);
    }
    return std::nullopt;
}

}  // namespace

std::string runnerEvidenceWords(const std::string& evidence) {
    if (evidence == "current") return "CPython's current thread state of that thread";
    if (evidence == "current_maker") return "gilstate.tstate_current, on the thread that made it (no frame of any thread names it)";
    if (evidence == "cframe") return "its cframe is on that thread's stack";
    if (evidence == "entry_frame") return "its interpreter frames are on that thread's stack";
    if (evidence == "register") return "a register of that thread holds it";
    if (evidence == "stack_word") return "a live frame of that thread holds it";
    return evidence;
}

void attributeRunners(const Target& target, NativeStacks* stacks, Report& report) {
    std::map<uint64_t, int> lwpOfPthread;
    std::set<int> lwps;
    for (const auto& t : target.threads()) {
        lwpOfPthread[t.pthread] = t.lwp;
        lwps.insert(t.lwp);
    }
    // Who made each state.
    std::map<uint64_t, const CPythonLayout*> layoutOf;
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters)
            for (const auto& ts : interp.tstates) {
                report.listedTstates.insert(ts.address);
                layoutOf[ts.address] = &rt.layout;
                TstatePlace& place = report.places[ts.address];
                auto it = ts.threadId ? lwpOfPthread.find(ts.threadId) : lwpOfPthread.end();
                bool nativeExists = ts.nativeThreadId && lwps.count(static_cast<int>(*ts.nativeThreadId));
                if (it != lwpOfPthread.end()) {
                    place.madeBy = it->second;
                    // A child of fork keeps the forking thread's struct pthread: the same
                    // thread_id with a native_thread_id of no thread here was made in the parent.
                    if (ts.nativeThreadId && *ts.nativeThreadId != it->second && !nativeExists) {
                        place.madeBy.reset();
                        place.madeBeforeFork = true;
                    }
                } else if (nativeExists) {
                    place.madeBy = static_cast<int>(*ts.nativeThreadId);
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

    auto ranges = stackRanges(target, stacks);
    for (const auto& [tstate, layout] : layoutOf)
        if (auto c = structuralClaim(target, *layout, tstate, ranges)) claim(tstate, *c);

    // Words: only on threads no structural evidence placed a state on, the innermost listed
    // state they hold (a thread runs one state at a time; deeper words may be stale locals).
    std::set<int> placed;
    for (const auto& [tstate, c] : best) placed.insert(c.lwp);
    std::map<int, std::pair<uint64_t, Claim>> wordOf;  // lwp -> its innermost listed word
    for (const auto& r : ranges) {
        if (placed.count(r.lwp)) continue;
        std::optional<std::pair<uint64_t, Claim>> found;
        for (size_t i = 0; i < r.registers.size() && !found; ++i)
            if (report.listed(r.registers[i]) && !best.count(r.registers[i]))
                found = std::make_pair(r.registers[i], Claim{r.lwp, "register", 0, 3});
        uint64_t from = r.low, to = std::min(r.high, r.low + kMaxStackScan);
        std::vector<uint64_t> words(to > from ? (to - from) / 8 : 0);
        size_t got = words.empty() ? 0 : target.read(from, words.data(), words.size() * 8) / 8;
        for (size_t w = 0; w < got && !found; ++w)
            if (report.listed(words[w]) && !best.count(words[w]))
                found = std::make_pair(words[w], Claim{r.lwp, "stack_word", w * 8, 4});
        if (found) wordOf[r.lwp] = *found;
    }
    // A state whose word two threads hold goes to neither: a stale copy cannot be told apart.
    std::map<uint64_t, int> holders;
    for (const auto& [lwp, w] : wordOf) ++holders[w.first];
    for (const auto& [lwp, w] : wordOf)
        if (holders[w.first] == 1) claim(w.first, w.second);

    // <= 3.11: the process-wide current pointer belongs to the thread that runs it.
    for (const auto& rt : report.runtimes) {
        if (!rt.tstateCurrent || !report.listed(rt.tstateCurrent)) continue;
        auto it = best.find(rt.tstateCurrent);
        std::optional<int> runner;
        if (it != best.end()) runner = it->second.lwp;
        else if (auto maker = report.places[rt.tstateCurrent].madeBy) {
            runner = maker;
            best[rt.tstateCurrent] = {*maker, "current_maker", 0, 5};
        }
        for (auto& row : report.threads) {
            if (row.currentSource != "gilstate.tstate_current") continue;
            if (runner && row.lwp == *runner) row.currentTstate = rt.tstateCurrent;
            else if (row.currentTstate == rt.tstateCurrent) row.currentTstate = 0;
        }
        if (it != best.end()) it->second.depth = 0;  // the GIL holder's current state is its innermost
    }

    for (const auto& [tstate, c] : best) {
        TstatePlace& place = report.places[tstate];
        place.lwp = c.lwp;
        place.evidence = c.evidence;
        place.depth = c.depth;
    }
}

}  // namespace pytstates
