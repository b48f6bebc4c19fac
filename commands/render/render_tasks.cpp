// SPDX-License-Identifier: Apache-2.0
#include "commands/render/render_tasks.h"

#include <functional>
#include <map>
#include <set>

#include "commands/render/finding_words.h"
#include "commands/render/render_stacks.h"
#include "commands/analysis/tasks.h"
#include "commands/render/text_encoding.h"
#include "commands/render/text_layout.h"
#include "symbols/text/base_name.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

constexpr size_t kTreeDepth = 64;
constexpr size_t kNameShown = 200;  // a task name's characters the text shows (the JSON has it whole)

// A name as the text shows it: its first kNameShown characters, then how many more it has.
std::string nameWords(const std::string& name, bool cut) {
    size_t chars = 0, at = name.size();
    for (size_t i = 0; i < name.size(); ++i)
        if ((static_cast<unsigned char>(name[i]) & 0xC0) != 0x80 && chars++ == kNameShown) {
            at = i;
            break;
        }
    if (at == name.size() && !cut) return "'" + shown(name) + "'";
    size_t rest = 0;
    for (size_t i = at; i < name.size(); ++i) rest += (static_cast<unsigned char>(name[i]) & 0xC0) != 0x80;
    return "'" + shown(name.substr(0, at)) + "'… (" + std::to_string(rest) + (cut ? "+" : "") + " more characters)";
}

std::string label(const AsyncioTask& t) { return nameWords(t.name, t.nameCut) + " " + hexAddress(t.address); }

// The words of a task's state: "ready" is pending with its next step queued.
std::string taskStateWords(const std::string& state) {
    return state == "ready" ? "ready to run (its next step is queued)" : stateWords(state);
}

std::string awaitWords(const StackWait& a, const std::map<uint64_t, const AsyncioTask*>& tasks) {
    if (a.kind == "task") {
        auto it = tasks.find(a.task);
        return "awaits task " + (it != tasks.end() ? label(*it->second) : hexAddress(a.task));
    }
    if (a.kind == "gather") return "awaits gather " + hexAddress(a.object);
    if (a.kind == "sleep") return "sleeps (future " + hexAddress(a.object) + ")";
    if (a.kind == "future") return "awaits future " + hexAddress(a.object);
    return "awaits asyncio." + std::string(a.kind == "event" ? "Event" : a.kind == "lock" ? "Lock" : a.kind == "condition" ? "Condition"
                                             : a.kind == "queue" ? "Queue" : a.kind == "semaphore" ? "Semaphore" : a.kind) +
           " " + hexAddress(a.object);
}

void tree(std::ostringstream& out, const EventLoopView& loop, const std::map<uint64_t, const AsyncioTask*>& tasks,
          const std::map<uint64_t, std::vector<uint64_t>>& children, const std::map<uint64_t, uint64_t>& holders, size_t width) {
    std::set<uint64_t> shown;
    std::vector<uint64_t> path;
    std::function<void(uint64_t, const std::string&, bool)> visit = [&](uint64_t address, const std::string& indent, bool last) {
        const AsyncioTask& t = *tasks.at(address);
        std::string branch = indent + (last ? "└── " : "├── ");
        std::string below = indent + (last ? "    " : "│   ");
        bool cycle = std::find(path.begin(), path.end(), address) != path.end();
        if (cycle || shown.count(address)) {
            out << branch << "(T) " << label(t) << (cycle ? "  <- cycle: back to this task" : "  (shown above)") << "\n";
            return;
        }
        shown.insert(address);
        out << branch << "(T) " << label(t) << "  " << taskStateWords(t.state);
        if (t.state == "running" && t.lwp) out << " on LWP " << t.lwp;
        if (t.waitsOn) {
            out << ", " << awaitWords(*t.waitsOn, tasks);
            auto h = holders.find(t.waitsOn->object);
            if (h != holders.end() && h->second != t.address && tasks.count(h->second))
                out << " held by " << label(*tasks.at(h->second));
        }
        out << "\n";
        for (uint64_t lock : t.holds) out << below << "    holds asyncio lock " << hexAddress(lock) << " (inside `async with`)\n";
        renderFramesText(out, below + "    ", t.frames, FrameLines::Tree, width, SIZE_MAX);  // a task's chain whole: it is what the task is
        if (path.size() >= kTreeDepth) {
            // The JSON has every task; the text says how many it leaves out below this depth.
            std::set<uint64_t> hidden;
            std::vector<uint64_t> todo{address};
            while (!todo.empty()) {
                uint64_t a = todo.back();
                todo.pop_back();
                auto c = children.find(a);
                if (c == children.end()) continue;
                for (uint64_t x : c->second)
                    if (!shown.count(x) && hidden.insert(x).second) todo.push_back(x);
            }
            if (!hidden.empty())
                out << below << "    … " << hidden.size() << " more task" << (hidden.size() == 1 ? "" : "s") << " it awaits, deeper than "
                    << kTreeDepth << " levels (the JSON has them: --json)\n";
            return;
        }
        path.push_back(address);
        auto c = children.find(address);
        if (c != children.end())
            for (size_t i = 0; i < c->second.size(); ++i) visit(c->second[i], below, i + 1 == c->second.size());
        path.pop_back();
    };
    // Roots: tasks nobody awaits; then whatever is left (tasks only in cycles).
    std::vector<uint64_t> order;
    for (const auto* t : loop.tasks)
        if (t->awaitedBy.empty()) order.push_back(t->address);
    for (const auto* t : loop.tasks) order.push_back(t->address);
    std::vector<uint64_t> roots;
    std::set<uint64_t> reached;
    std::function<void(uint64_t)> reach = [&](uint64_t a) {
        if (!reached.insert(a).second) return;
        auto c = children.find(a);
        if (c != children.end())
            for (uint64_t x : c->second) reach(x);
    };
    for (uint64_t a : order)
        if (!reached.count(a)) {
            roots.push_back(a);
            reach(a);
        }
    for (size_t i = 0; i < roots.size(); ++i) visit(roots[i], "  ", i + 1 == roots.size());
}

void awaitJson(JsonWriter& w, const StackWait& a) {
    w.beginObject();
    w.field("kind", a.kind);
    w.field("object", hexAddress(a.object));
    w.fieldOrNull("task", a.task != 0, hexAddress(a.task));
    w.endObject();
}

}  // namespace

bool tasksStuck(const Report& report) {
    for (const auto& f : report.findings)
        if (!f.taskCycle.empty() || f.code == FindingCode::EventLoopBlocked) return true;
    return false;
}

void renderTasksText(std::ostringstream& out, const Report& report, size_t width, bool showTree) {
    if (!report.tasksRead) return;
    auto loops = eventLoopViews(report);
    size_t count = 0;
    for (const auto& l : loops) count += l.tasks.size();
    if (!showTree) {  // analysed all the same: what there is, in one line (what could not be read: warnings)
        if (loops.empty() && !count) return;
        out << "ASYNCIO: " << loops.size() << " event loop" << (loops.size() == 1 ? "" : "s") << ", " << count << " task"
            << (count == 1 ? "" : "s") << " (--tasks shows them)\n\n";
        return;
    }
    out << "ASYNCIO (" << loops.size() << " event loop" << (loops.size() == 1 ? "" : "s") << ", " << count << " task"
        << (count == 1 ? "" : "s") << "; each task's frames innermost first)\n";
    for (const auto& scan : report.asyncio)
        if (!scan.problem.empty()) out << "  note: " << shown(scan.problem) << "\n";
    for (const auto& loop : loops) {
        std::map<uint64_t, const AsyncioTask*> tasks;
        std::map<uint64_t, uint64_t> holders;
        for (const auto* t : loop.tasks) {
            tasks[t->address] = t;
            for (uint64_t lock : t->holds) holders.emplace(lock, t->address);
        }
        // A task's children in the tree: the tasks that it is awaited by.
        std::map<uint64_t, std::vector<uint64_t>> children;
        for (const auto* t : loop.tasks)
            for (uint64_t by : t->awaitedBy)
                if (tasks.count(by)) children[by].push_back(t->address);
        // A task waiting for a lock another task holds: shown under the holder too, as it waits for it.
        out << "  event loop " << hexAddress(loop.loop);
        if (loop.lwp) out << " runs on LWP " << *loop.lwp;
        else out << " is not running";
        out << ", " << loop.tasks.size() << " task" << (loop.tasks.size() == 1 ? "" : "s");
        if (loop.ready) out << ", " << *loop.ready << " ready callback" << (*loop.ready == 1 ? "" : "s");
        if (loop.timers) {
            out << ", " << loop.timers->scheduled << " timer" << (loop.timers->scheduled == 1 ? "" : "s");
            if (loop.timers->due) out << " (" << *loop.timers->due << " due)";
        }
        if (loop.runningTask && tasks.count(loop.runningTask)) out << ", running " << label(*tasks[loop.runningTask]);
        else if (loop.lwp) {
            // Said idle only where its thread's wait says it is in the selector (asyncio-loop).
            const ThreadRow* row = nullptr;
            for (const auto& t : report.threads)
                if (t.lwp == *loop.lwp) row = &t;
            bool idle = row && row->blockedOn && row->blockedOn->pythonKind == "asyncio-loop";
            out << ", no task running" << (idle ? " (idle in its selector: it waits for I/O or a timer)" : "");
        }
        out << "\n";
        tree(out, loop, tasks, children, holders, width);
    }
    out << "\n";
}

bool renderTaskHang(std::ostringstream& out, const Report& report, bool color, size_t width) {
    bool any = false;
    for (const auto& f : report.findings) {
        if (!f.taskCycle.empty()) {
            any = true;
            std::map<uint64_t, std::string> names;
            for (const auto& s : f.taskCycle) names[s.task] = "'" + shown(s.name) + "' ";
            out << paint("HANG", Paint::Hang, color) << "  deadlock: " << (f.taskCycle.size() == 1 ? std::string("1 asyncio task waits for itself")
                                                                                     : std::to_string(f.taskCycle.size()) + " asyncio tasks wait for each other") << "\n";
            for (size_t i = 0; i < f.taskCycle.size(); ++i) {
                const TaskCycleStep& s = f.taskCycle[i];
                out << "  " << (i ? "-> " : "   ") << "task '" << shown(s.name) << "' " << hexAddress(s.task) << "  ";
                if (s.waitsFor == "task") out << "awaits task " << names[s.object] << hexAddress(s.object);
                else if (awaitsThroughFuture(s.waitsFor))
                    out << "awaits " << s.waitsFor << " " << hexAddress(s.object) << ", which waits for task " << names[s.heldByTask]
                        << hexAddress(s.heldByTask);
                else out << "waits for asyncio " << s.waitsFor << " " << hexAddress(s.object) << " held by task " << names[s.heldByTask]
                         << hexAddress(s.heldByTask);
                out << "\n";
                if (s.at) out << frameWhere("         at ", *s.at, width) << "\n";
            }
            out << "  -> back to task '" << shown(f.taskCycle.front().name) << "'\n";
        } else if (f.code == FindingCode::EventLoopBlocked) {
            any = true;
            out << paint("HANG", Paint::Hang, color) << "  event loop " << hexAddress(f.loop) << " is blocked by " << (f.task ? "a task" : "a callback")
                << "; waiting: " << loopWaitingWords(f.readyCallbacks, f.timers) << "\n";
            out << "     LWP " << (f.lwp ? std::to_string(*f.lwp) : "?") << "  ";
            if (f.task) out << "task '" << shown(f.taskName) << "' " << hexAddress(f.task) << " ";
            out << (f.blocked ? shown(blockedOnWords(*f.blocked))
                              : "is blocked in " + (f.function.empty() ? std::string("a blocking call") : shown(f.function) + "()"))
                << "\n";
            if (f.taskFrame) out << frameWhere("         at ", *f.taskFrame, width) << "\n";
        }
    }
    if (any) out << "\n";
    return any;
}

void loopTimersJson(JsonWriter& w, const std::optional<LoopTimers>& timers) {
    if (!timers) {
        w.null();
        return;
    }
    w.beginObject();
    w.field("due", timers->due);
    w.field("most_overdue_s", timers->mostOverdue);
    w.field("next_in_s", timers->nextIn);
    w.field("scheduled", timers->scheduled);
    w.endObject();
}

void renderTasksJsonNotes(JsonWriter&, const Report&) {}  // the notes are in warnings[] (readTasks)

void renderTasksJson(JsonWriter& w, const Report& report) {
    if (!report.tasksRead) return;
    w.key("event_loops");
    w.beginArray();
    for (const auto& loop : eventLoopViews(report)) {
        w.beginObject();
        w.field("interpreter", hexAddress(loop.interp));
        w.field("loop", hexAddress(loop.loop));
        w.field("lwp", loop.lwp);
        w.field("ready", loop.ready);
        w.key("timers");
        loopTimersJson(w, loop.timers);
        w.fieldOrNull("running_task", loop.runningTask != 0, hexAddress(loop.runningTask));
        w.key("tasks");
        w.beginArray();
        for (const auto* task : loop.tasks) {
            const AsyncioTask& t = *task;
            w.beginObject();
            w.field("address", hexAddress(t.address));
            w.key("awaited_by");
            w.beginArray();
            for (uint64_t by : t.awaitedBy) w.string(hexAddress(by));
            w.endArray();
            w.key("awaits");
            if (t.waitsOn) awaitJson(w, *t.waitsOn);
            else w.null();
            w.fieldOrNull("coroutine", t.coro != 0, hexAddress(t.coro));
            renderFramesJson(w, t.frames, SIZE_MAX);
            w.field("name", t.name);
            w.field("state", t.state);
            w.endObject();
        }
        w.endArray();
        w.endObject();
    }
    w.endArray();
}

void renderTaskCycleJson(JsonWriter& w, const Finding& f) {
    w.key("cycle");
    w.beginArray();
    for (const auto& s : f.taskCycle) {
        w.beginObject();
        if (s.at) {
            w.key("at");
            w.beginObject();
            w.key("python");
            renderFrameJson(w, *s.at);
            w.endObject();
        }
        w.fieldOrNull("held_by_task", s.heldByTask != 0, hexAddress(s.heldByTask));
        w.field("object", hexAddress(s.object));
        w.field("task", hexAddress(s.task));
        w.field("waits_for", s.waitsFor);
        w.endObject();
    }
    w.endArray();
}

}  // namespace pytstates
