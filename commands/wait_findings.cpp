// SPDX-License-Identifier: Apache-2.0
#include "commands/wait_findings.h"

#include <algorithm>
#include <map>
#include <set>

namespace pytstates {

namespace {

bool hasOwner(WaitKind k) {
    return k == WaitKind::Gil || k == WaitKind::Mutex || k == WaitKind::Rwlock || k == WaitKind::Join || k == WaitKind::PythonLock ||
           k == WaitKind::StopTheWorld;
}

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

std::string layoutFrom(const std::string& source) {
    if (source == "dwarf") return "DWARF";
    if (source == "debug_offsets") return "_Py_DebugOffsets";
    return "the built-in layout table";
}

// Where the GIL's holder was read: per interpreter, the lock's locked flag, and the state its
// holder runs (last_holder, or gilstate.tstate_current up to 3.11).
struct GilFact {
    int64_t interp = 0;
    uint64_t tstate = 0;
    uint64_t takenBy = 0;
    Interpreter::GilSource source = Interpreter::GilSource::None;
    std::string layout;
};

std::string gilHolderSource(const GilFact& g, int lwp) {
    std::string interp = "interpreter " + std::to_string(g.interp) + "'s GIL";
    std::string run = ", run by LWP " + std::to_string(lwp);
    std::string words;
    switch (g.source) {
        case Interpreter::GilSource::TstateCurrent:
            words = interp + " is locked and gilstate.tstate_current names tstate " + hexAddress(g.tstate) + run;
            break;
        default: words = "the last_holder of " + interp + " names tstate " + hexAddress(g.tstate) + run;
    }
    if (g.takenBy) words += "; last_holder names " + hexAddress(g.takenBy) + ", the state that took it";
    return "GIL holder (" + words + "; layout from " + layoutFrom(g.layout) + ")";
}

// The evidence of one thread's wait: its stack, and the field that names whom it waits for.
void addWaitSources(const Report& report, int lwp, const BlockedOn& b, const std::map<int, GilFact>& gil, std::vector<std::string>& out) {
    std::string stack = "native stack of LWP " + std::to_string(lwp);
    if (b.frame && !b.function.empty()) stack += " (frame #" + std::to_string(*b.frame) + " " + b.function + ")";
    out.push_back(stack);
    std::string obj = b.object ? " at " + hexAddress(b.object) : "";
    std::string layout = b.layoutSource.empty() ? "" : " (layout from " + b.layoutSource + ")";
    // A live target resumed before the waits were read: this owner is not from the stop's copy.
    if (b.ownerReadLate) layout += ", read from the running process after the stop ended";
    switch (b.kind) {
        case WaitKind::Gil:
            if (b.heldBy)
                if (auto it = gil.find(*b.heldBy); it != gil.end()) out.push_back(gilHolderSource(it->second, *b.heldBy));
            break;
        case WaitKind::Mutex:
            if (b.object) out.push_back("pthread_mutex_t.__data.__owner" + obj + layout);
            break;
        case WaitKind::Rwlock:
            if (b.object) out.push_back("pthread_rwlock_t.__data.__cur_writer" + obj + layout);
            break;
        case WaitKind::Join:
            if (b.object && b.heldBy)
                out.push_back("struct pthread" + obj + " of LWP " + std::to_string(*b.heldBy) + " (the joined thread)" +
                              (b.ownerReadLate ? ", its TID read from the running process after the stop ended" : ""));
            break;
        case WaitKind::PythonLock:
            if (b.object && b.heldBy) out.push_back("RLock.rlock_owner" + obj + layout);
            break;
        case WaitKind::StopTheWorld:
            if (b.object && b.heldBy)
                out.push_back("PyThreadState.state" + obj + " (layout from " + layoutFrom(b.layoutSource) + "): attached, run by LWP " +
                              std::to_string(*b.heldBy));
            break;
        default: break;
    }
    (void)report;
}

std::string lwpList(const std::vector<int>& lwps) {
    std::string list;
    for (size_t i = 0; i < lwps.size(); ++i) list += (i ? ", " : "") + std::to_string(lwps[i]);
    return list;
}

// A warning about one blocked thread that other threads wait for.
Finding blockedThreadFinding(FindingCode code, int lwp, const BlockedOn& b, const std::vector<int>& waiters) {
    Finding f;
    f.code = code;
    f.lwp = lwp;
    f.function = b.kind == WaitKind::Syscall && !b.call.empty() ? b.call : b.function;
    f.waiters = waiters;
    return f;
}

// "LWP 12 holds the GIL and waits for mutex 0x... held by LWP 3 in f (file.cpp:7)"
std::string blockedWords(int lwp, const std::string& state, const BlockedOn& b) {
    std::string at = where(b.at, b.pythonAt);
    return "LWP " + std::to_string(lwp) + " " + state + " and " + waitWords(b.kind, b.object, b.call) + heldByWords(b.kind, b.heldBy) +
           (at.empty() ? "" : " in " + at);
}

}  // namespace

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

std::string heldByWords(WaitKind kind, const std::optional<int>& heldBy) {
    if (!heldBy) return "";
    if (kind == WaitKind::StopTheWorld) return ", waiting for LWP " + std::to_string(*heldBy) + " to detach";
    return " held by LWP " + std::to_string(*heldBy);
}

void addWaitFindings(Report& report) {
    if (!report.waitsRead) return;
    std::map<int, const ThreadRow*> rows;
    for (const auto& row : report.threads)
        if (row.blockedOn) rows[row.lwp] = &row;
    auto next = [&](int lwp) -> std::optional<int> {
        auto it = rows.find(lwp);
        if (it == rows.end() || !hasOwner(it->second->blockedOn->kind) || !it->second->blockedOn->heldBy) return std::nullopt;
        return *it->second->blockedOn->heldBy;
    };
    std::set<int> gilHolders;
    std::map<int, GilFact> gilFacts;
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters)
            if (auto lwp = report.gilHolderLwp(interp)) {
                gilHolders.insert(*lwp);
                gilFacts[*lwp] = GilFact{interp.id, interp.gilHolder, interp.gilTakenBy, interp.gilHolderSource, rt.layout.source};
            }

    // Each thread waits for at most one other: a cycle is found by walking from every thread.
    std::set<int> inCycle, walked;
    for (const auto& [start, row] : rows) {
        (void)row;
        if (!next(start) || walked.count(start)) continue;  // waits for no one: starts no cycle (most threads)
        std::vector<int> path;
        std::map<int, size_t> onPath;
        std::optional<int> at = start;
        while (at && !walked.count(*at) && !onPath.count(*at)) {
            onPath[*at] = path.size();
            path.push_back(*at);
            at = next(*at);
        }
        for (int lwp : path) walked.insert(lwp);
        if (!at || !onPath.count(*at)) continue;
        std::vector<int> cycle(path.begin() + static_cast<long>(onPath[*at]), path.end());
        // Told from the GIL's holder when the GIL is in the cycle, else from the lowest LWP.
        auto first = std::find_if(cycle.begin(), cycle.end(), [&](int l) { return gilHolders.count(l) != 0; });
        if (first == cycle.end()) first = std::min_element(cycle.begin(), cycle.end());
        std::rotate(cycle.begin(), first, cycle.end());
        Finding f;
        f.code = FindingCode::Deadlock;
        f.lwp = cycle.front();
        std::string chain;
        std::vector<int> late;
        for (int lwp : cycle) {
            inCycle.insert(lwp);
            const BlockedOn& b = *rows[lwp]->blockedOn;
            CycleStep step{lwp, b.kind, b.object, b.heldBy, b.at, b.pythonAt};
            f.cycle.push_back(step);
            addWaitSources(report, lwp, b, gilFacts, f.sources);
            if (b.ownerReadLate) late.push_back(lwp);
            chain += (chain.empty() ? "" : "; ") + std::string("LWP ") + std::to_string(lwp) + " " + waitWords(b.kind, b.object, b.call) +
                     heldByWords(b.kind, b.heldBy);
        }
        // A stop of the world in the cycle: the thread it waits for blocks while attached.
        const CycleStep* stop = nullptr;
        for (const auto& s : f.cycle)
            if (s.waitsFor == WaitKind::StopTheWorld) stop = &s;
        const CycleStep* holder = nullptr;
        for (const auto& s : f.cycle)
            if (gilHolders.count(s.lwp) && s.waitsFor != WaitKind::Gil) holder = &s;
        f.message = (cycle.size() == 1 ? std::string("1 thread waits for itself: ")
                                        : std::to_string(cycle.size()) + " threads wait for each other in a cycle: ") + chain + ". ";
        if (stop) {
            const BlockedOn& attached = *rows[*stop->heldBy]->blockedOn;
            f.message += "LWP " + std::to_string(*stop->heldBy) + " is attached to Python while it " +
                         waitWords(attached.kind, attached.object, attached.call) +
                         ": detach before blocking (py::gil_scoped_release, Py_BEGIN_ALLOW_THREADS); in a free-threaded build an "
                         "attached thread that blocks keeps every stop of the world (a garbage collection among them) waiting";
        } else if (holder) {
            const ThreadRow* row = rows[holder->lwp];
            f.message += "LWP " + std::to_string(holder->lwp) + " holds the GIL while it " +
                         waitWords(holder->waitsFor, holder->object, row->blockedOn->call) +
                         ": release the GIL before blocking (py::gil_scoped_release, Py_BEGIN_ALLOW_THREADS), or take the GIL "
                         "and the other locks in one order everywhere";
        } else {
            f.message += "The locks are taken in opposite orders: take them in one order everywhere";
        }
        if (!late.empty()) {
            f.message += ". The owner of what LWP " + lwpList(late) + (late.size() == 1 ? " waits" : " wait") +
                         " for was read after the process was resumed: if it changed since the stop, this cycle is not real; "
                         "check again to confirm";
        }
        report.findings.push_back(std::move(f));
    }

    for (int holder : gilHolders) {
        if (inCycle.count(holder) || !rows.count(holder)) continue;
        const BlockedOn& b = *rows[holder]->blockedOn;
        if (b.kind == WaitKind::None || b.kind == WaitKind::Gil) continue;
        std::vector<int> waiters;
        for (const auto& [lwp, row] : rows)
            if (lwp != holder && row->blockedOn->kind == WaitKind::Gil && row->blockedOn->heldBy == holder) waiters.push_back(lwp);
        if (waiters.empty()) continue;
        Finding f = blockedThreadFinding(FindingCode::GilHeldWhileBlocked, holder, b, waiters);
        addWaitSources(report, holder, b, gilFacts, f.sources);
        if (auto it = gilFacts.find(holder); it != gilFacts.end()) f.sources.push_back(gilHolderSource(it->second, holder));
        for (int w : waiters) f.sources.push_back("native stack of LWP " + std::to_string(w) + " (frame #" +
                                                  std::to_string(rows[w]->blockedOn->frame.value_or(0)) + " " + rows[w]->blockedOn->function + ")");
        f.message = blockedWords(holder, "holds the GIL", b);
        f.message += ", while " + std::to_string(waiters.size()) + (waiters.size() == 1 ? " thread waits" : " threads wait");
        f.message += " for the GIL (LWP " + lwpList(waiters) +
                     "): release the GIL around blocking calls (Py_BEGIN_ALLOW_THREADS, py::gil_scoped_release)";
        report.findings.push_back(std::move(f));
    }

    // A stop of the world that waits for an attached thread blocked in something else, with no
    // cycle: the world stops only once that wait ends.
    std::map<int, std::vector<int>> stoppersOf;
    for (const auto& [lwp, row] : rows) {
        const BlockedOn& b = *row->blockedOn;
        if (b.kind == WaitKind::StopTheWorld && b.heldBy && !inCycle.count(lwp)) stoppersOf[*b.heldBy].push_back(lwp);
    }
    for (const auto& [lwp, stoppers] : stoppersOf) {
        auto it = rows.find(lwp);
        if (it == rows.end() || inCycle.count(lwp)) continue;
        const BlockedOn& b = *it->second->blockedOn;
        if (b.kind == WaitKind::None || b.kind == WaitKind::StopTheWorld) continue;
        Finding f = blockedThreadFinding(FindingCode::StopTheWorldBlocked, lwp, b, stoppers);
        addWaitSources(report, lwp, b, gilFacts, f.sources);
        for (int s : stoppers) addWaitSources(report, s, *rows[s]->blockedOn, gilFacts, f.sources);
        f.message = blockedWords(lwp, "is attached to Python", b);
        const std::string& why = rows[stoppers.front()]->blockedOn->call;
        f.message += ", while LWP " + lwpList(stoppers) + (stoppers.size() == 1 ? " stops" : " stop") + " the world";
        if (stoppers.size() == 1 && !why.empty()) f.message += " (for " + why + ")";
        f.message += " and waits for it to detach: detach before blocking (py::gil_scoped_release, Py_BEGIN_ALLOW_THREADS); "
                     "in a free-threaded build an attached thread that blocks keeps every stop of the world (a garbage collection "
                     "among them) waiting";
        report.findings.push_back(std::move(f));
    }
}

}  // namespace pytstates
