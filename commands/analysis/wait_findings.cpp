// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/wait_findings.h"

#include <algorithm>
#include <map>
#include <set>

namespace pytstates {

namespace {

bool hasOwner(WaitKind k) {
    return k == WaitKind::Gil || k == WaitKind::Mutex || k == WaitKind::Rwlock || k == WaitKind::Join || k == WaitKind::PythonLock ||
           k == WaitKind::StopTheWorld;
}

// Where the GIL's holder was read: per interpreter, the lock's locked flag, and the state its
// holder runs (last_holder, or gilstate.tstate_current up to 3.11).
using GilFacts = std::map<int, source::GilHolder>;  // by the LWP that runs the holder

// The evidence of one thread's wait: its stack, and the field that names whom it waits for.
void addWaitSources(int lwp, const BlockedOn& b, const GilFacts& gil, std::vector<FindingSource>& out) {
    out.emplace_back(source::NativeStack{lwp, b.frame, b.function, false});
    switch (b.kind) {
        case WaitKind::Gil:
            if (b.heldBy)
                if (auto it = gil.find(*b.heldBy); it != gil.end()) out.emplace_back(it->second);
            break;
        case WaitKind::Mutex:
        case WaitKind::Rwlock:
            if (b.object) out.emplace_back(source::LockOwner{b.kind, b.object, b.layoutSource, b.ownerReadLate});
            break;
        case WaitKind::Join:
            if (b.object && b.heldBy) out.emplace_back(source::JoinedThread{b.object, *b.heldBy, b.ownerReadLate});
            break;
        case WaitKind::PythonLock:
            if (b.object && b.heldBy && b.holderEvidence == "with-block" && b.holderAt)
                out.emplace_back(source::WithBlock{*b.heldBy, b.holderObject, b.holderAt->address, b.holderAt->function, b.holderAt->file,
                                                   b.holderAt->line, b.holderWithLine, b.layoutSource});
            else if (b.object && b.heldBy)
                out.emplace_back(source::LockOwner{b.kind, b.object, b.layoutSource, b.ownerReadLate});
            break;
        case WaitKind::StopTheWorld:
            if (b.object && b.heldBy) out.emplace_back(source::AttachedState{b.object, *b.heldBy, b.layoutSource});
            break;
        default: break;
    }
}

// A warning about one blocked thread that other threads wait for.
Finding blockedThreadFinding(FindingCode code, int lwp, const BlockedOn& b, const std::vector<int>& waiters) {
    Finding f;
    f.code = code;
    f.lwp = lwp;
    f.function = b.kind == WaitKind::Syscall && !b.call.empty() ? b.call : b.function;
    f.waiters = waiters;
    f.blocked = b;
    return f;
}

}  // namespace

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
    GilFacts gilFacts;
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters)
            if (auto lwp = report.gilHolderLwp(interp)) {
                gilHolders.insert(*lwp);
                gilFacts[*lwp] = source::GilHolder{*lwp, interp.id, interp.gilHolder, interp.gilTakenBy, interp.gilHolderSource, rt.layout.source};
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
        for (int lwp : cycle) {
            inCycle.insert(lwp);
            const BlockedOn& b = *rows[lwp]->blockedOn;
            f.cycle.push_back({lwp, b.kind, b.object, b.heldBy, b.at, b.pythonAt, b.call, b.ownerReadLate, gilHolders.count(lwp) != 0,
                               b.pythonKind, b.pythonObject, b.pythonName, b.holderEvidence, b.holderAt, b.holderWithLine, b.holderName});
            addWaitSources(lwp, b, gilFacts, f.sources);
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
        addWaitSources(holder, b, gilFacts, f.sources);
        if (auto it = gilFacts.find(holder); it != gilFacts.end()) f.sources.emplace_back(it->second);
        for (int w : waiters)
            f.sources.emplace_back(source::NativeStack{w, rows[w]->blockedOn->frame, rows[w]->blockedOn->function, true});
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
        addWaitSources(lwp, b, gilFacts, f.sources);
        for (int s : stoppers) addWaitSources(s, *rows[s]->blockedOn, gilFacts, f.sources);
        f.stopFor = rows[stoppers.front()]->blockedOn->call;
        report.findings.push_back(std::move(f));
    }
}

}  // namespace pytstates
