// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/tasks.h"

#include <map>
#include <set>

namespace pytstates {

std::optional<PyFrame> programFrame(const std::vector<PyFrame>& frames) {
    for (const auto& f : frames)
        if (!isAsyncioFile(f.file)) return f;
    return std::nullopt;
}

LoopTimers loopTimers(const std::vector<double>& whens, std::optional<double> clock) {
    LoopTimers t;
    t.scheduled = whens.size();
    if (!clock) return t;
    t.due = 0;
    for (double when : whens) {  // sorted: the earliest first
        if (when <= *clock) {
            if (!t.mostOverdue) t.mostOverdue = *clock - when;
            ++*t.due;
        } else if (!t.nextIn) {
            t.nextIn = when - *clock;
        }
    }
    return t;
}

// The thread running a loop: the one running its thread state, else (no evidence places that state:
// a core without the thread's stack and TLS bytes) the one whose pthread_t the loop's _thread_id is.
std::optional<int> loopLwp(const Report& report, const AsyncioLoop& loop) {
    if (!loop.tstate) return std::nullopt;
    if (auto lwp = report.lwpFor(loop.tstate)) return lwp;
    for (const auto& row : report.threads)
        if (loop.threadIdent && row.pthread == loop.threadIdent) return row.lwp;
    return std::nullopt;
}

bool awaitsThroughFuture(const std::string& kind) {
    return kind == "gather" || kind == "shield" || kind == "wait" || kind == "wait_for" || kind == "taskgroup";
}

std::vector<EventLoopView> eventLoopViews(const Report& report) {
    std::vector<EventLoopView> views;
    for (const auto& scan : report.asyncio)
        for (const auto& loop : scan.loops) {
            EventLoopView v;
            v.loop = loop.address;
            v.interp = loop.interp;
            v.lwp = loopLwp(report, loop);
            v.runningTask = loop.runningTask;
            v.ready = loop.ready;
            if (loop.timers) v.timers = loopTimers(*loop.timers, scan.clock);
            for (size_t i : loop.tasks) v.tasks.push_back(&scan.tasks[i]);
            views.push_back(std::move(v));
        }
    return views;
}

namespace {

void addTaskCycles(const AsyncioScan& scan, Report& report) {
    std::map<uint64_t, const AsyncioTask*> byAddress;
    std::map<uint64_t, uint64_t> holder;  // lock -> the task holding it
    for (const auto& t : scan.tasks) {
        byAddress[t.address] = &t;
        for (uint64_t lock : t.holds) holder.emplace(lock, t.address);
    }
    // A pending task's edges: the tasks it cannot resume before (it awaits them, directly or
    // through a gather, shield, wait_for or TaskGroup exit), and the task holding the asyncio lock
    // it waits for.
    struct Edge {
        uint64_t to;
        std::string kind;  // StackWait::kind, or the TaskAwaitEdge's via
        uint64_t object;
    };
    std::map<uint64_t, std::vector<Edge>> edges;
    for (const auto& t : scan.tasks) {
        if (!t.waitsOn) continue;
        auto& out = edges[t.address];
        for (const auto& e : t.waitsFor)
            if (byAddress.count(e.task)) out.push_back({e.task, e.via, e.via == "task" ? e.task : e.future});
        auto h = holder.find(t.waitsOn->object);
        if (h != holder.end() && h->second != t.address) out.push_back({h->second, t.waitsOn->kind, t.waitsOn->object});
    }
    // Depth-first from each task (iterative: a chain may be thousands deep); an edge back to a task
    // on the path closes a cycle. One finding per cycle whose tasks no earlier cycle has.
    enum Mark { White, OnPath, Done };
    std::map<uint64_t, Mark> mark;
    std::set<uint64_t> reported;
    for (const auto& start : scan.tasks) {
        if (mark[start.address] != White) continue;
        std::vector<std::pair<uint64_t, size_t>> path;  // task, next edge to follow
        std::vector<const Edge*> via;                   // the edge from path[i] to path[i + 1]
        path.push_back({start.address, 0});
        mark[start.address] = OnPath;
        while (!path.empty()) {
            auto& [at, next] = path.back();
            const auto& out = edges[at];
            if (next == out.size()) {
                mark[at] = Done;
                path.pop_back();
                if (!via.empty()) via.pop_back();
                continue;
            }
            const Edge& e = out[next++];
            Mark m = mark[e.to];
            if (m == White) {
                via.push_back(&e);
                path.push_back({e.to, 0});
                mark[e.to] = OnPath;
                continue;
            }
            if (m != OnPath) continue;
            // A cycle: from e.to along the path back to `at`, then e.
            size_t from = 0;
            while (path[from].first != e.to) ++from;
            bool fresh = true;
            for (size_t i = from; i < path.size(); ++i) fresh = fresh && !reported.count(path[i].first);
            if (!fresh) continue;
            Finding f;
            f.code = FindingCode::Deadlock;
            for (size_t i = from; i < path.size(); ++i) {
                const AsyncioTask& t = *byAddress[path[i].first];
                const Edge& step = i + 1 < path.size() ? *via[i] : e;
                reported.insert(t.address);
                TaskCycleStep s;
                s.task = t.address;
                s.name = t.name;
                s.waitsFor = step.kind;
                s.object = step.object;
                s.heldByTask = step.to;
                s.at = programFrame(t.frames);
                f.taskCycle.push_back(std::move(s));
            }
            report.findings.push_back(std::move(f));
        }
    }
}

// A frame of asyncio's Handle._run (events.py): the thread runs one of the loop's callbacks.
bool runsCallback(const std::vector<PyFrame>& frames) {
    for (const auto& f : frames)
        if (f.function == "_run" && isAsyncioFile(f.file) && f.file.size() >= 9 && f.file.compare(f.file.size() - 9, 9, "events.py") == 0)
            return true;
    return false;
}

// A loop whose thread runs its task (or one of its callbacks) and is blocked in something other than
// the loop's selector: a system call, a lock, a sleep. A thread waiting for the GIL is not blocked by
// its own call (gil-held-while-blocked tells who holds it); one that runs is not blocked.
void addBlockedLoops(const AsyncioScan& scan, Report& report) {
    for (const auto& loop : scan.loops) {
        auto lwp = loopLwp(report, loop);
        if (!lwp) continue;
        const ThreadRow* row = nullptr;
        for (const auto& t : report.threads)
            if (t.lwp == *lwp) row = &t;
        if (!row || !row->blockedOn) continue;
        const BlockedOn& b = *row->blockedOn;
        if (b.kind == WaitKind::None || b.kind == WaitKind::Gil || b.pythonKind == "asyncio-loop") continue;
        const AsyncioTask* task = nullptr;
        for (const auto& t : scan.tasks)
            if (loop.runningTask && t.address == loop.runningTask) task = &t;
        const std::vector<PyFrame>* threadFrames = nullptr;
        for (const auto& rt : report.runtimes)
            for (const auto& interp : rt.interpreters)
                for (const auto& ts : interp.tstates)
                    if (ts.address == loop.tstate) threadFrames = &ts.frames;
        // No task runs: blocked in one of the loop's callbacks only when a frame shows one running
        // (a loop of another kind, uvloop's, idles in a selector of its own with no Python frame).
        if (!task && !(threadFrames && runsCallback(*threadFrames))) continue;
        Finding f;
        f.code = FindingCode::EventLoopBlocked;
        f.lwp = lwp;
        f.tstate = loop.tstate;
        f.loop = loop.address;
        f.readyCallbacks = loop.ready;
        if (loop.timers) f.timers = loopTimers(*loop.timers, scan.clock);
        f.blocked = b;
        f.function = !b.call.empty() ? b.call : b.function;
        if (task) {
            f.task = task->address;
            f.taskName = task->name;
            if (!task->frames.empty()) f.taskFrame = task->frames.front();
        } else if (b.pythonAt) {
            f.taskFrame = b.pythonAt;
        }
        report.findings.push_back(std::move(f));
    }
}

}  // namespace

void markIdleLoops(Report& report) {
    for (const auto& scan : report.asyncio)
        for (const auto& loop : scan.loops) {
            auto lwp = loopLwp(report, loop);
            if (!lwp || loop.runningTask) continue;
            for (auto& row : report.threads) {
                if (row.lwp != *lwp || !row.blockedOn) continue;
                BlockedOn& b = *row.blockedOn;
                static const std::set<std::string> polls = {"epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6"};
                if (b.kind != WaitKind::Syscall || !b.pythonKind.empty() || b.pythonAt || !polls.count(b.call)) continue;
                b.pythonKind = "asyncio-loop";
                b.pythonObject = loop.address;
                b.note = "no Python frame of this thread is read; the loop's _thread_id names it, no task of the loop runs, and it "
                         "waits in " + b.call + ": taken as the loop's selector";
            }
        }
}

void addTaskFindings(Report& report) {
    for (const auto& scan : report.asyncio) {
        addTaskCycles(scan, report);
        addBlockedLoops(scan, report);
    }
}

}  // namespace pytstates
