// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/asyncio_tasks.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "symbols/cpython/gc_objects.h"
#include "symbols/cpython/object_reader.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/cpython/stack_walker.h"
#include "symbols/text/base_name.h"

namespace pytstates {

namespace {

constexpr size_t kMaxChain = 256;       // coroutines awaiting coroutines, per task
constexpr size_t kMaxStack = 4096;      // value-stack entries of one frame looked at
constexpr size_t kMaxCallbacks = 4096;  // a future's callbacks read
constexpr size_t kMaxTypeChain = 64;
constexpr size_t kMaxTimers = 1 << 20;  // a loop's timers read
constexpr size_t kMaxMembers = 64;      // a type's __slots__ members looked at

enum class TypeKind { Other, Task, Future };

class Reader {
public:
    Reader(const Target& target, const Runtime& rt, const AsyncioLayout& layout)
        : t_(target), cl_(rt.layout), a_(layout), walker_(target, rt.layout), frames_(walker_.frames()), objects_(target, rt.layout) {}

    uint64_t ptr(uint64_t address) const { return address ? t_.readPointer(address).value_or(0) : 0; }

    const std::string& typeName(uint64_t object) {
        static const std::string none;
        uint64_t type = ptr(object + cl_.objectType);
        if (!type) return none;
        auto it = typeNames_.find(type);
        if (it != typeNames_.end()) return it->second;
        uint64_t name = ptr(type + cl_.typeName);
        return typeNames_[type] = name ? t_.readCString(name, 128).value_or("") : "";
    }

    // _asyncio.Task or _asyncio.Future, or a subclass of either (asyncio.gather's _GatheringFuture).
    TypeKind kindOfType(uint64_t type) {
        auto it = typeKinds_.find(type);
        if (it != typeKinds_.end()) return it->second;
        TypeKind kind = TypeKind::Other;
        uint64_t t = type;
        for (size_t depth = 0; t && depth < kMaxTypeChain && kind == TypeKind::Other; ++depth) {
            uint64_t name = ptr(t + cl_.typeName);
            std::string n = name ? t_.readCString(name, 32).value_or("") : "";
            if (n == "_asyncio.Task") kind = TypeKind::Task;
            else if (n == "_asyncio.Future") kind = TypeKind::Future;
            t = ptr(t + cl_.typeBase);
        }
        typeKinds_[type] = kind;
        return kind;
    }
    TypeKind kindOf(uint64_t object) { return object ? kindOfType(ptr(object + cl_.objectType)) : TypeKind::Other; }

    std::string str(uint64_t object, size_t max = 200) { return object ? readPyUnicode(t_, cl_, object, max).value_or("") : ""; }

    using Link = StackWalker::Await;
    // The coroutine chain from `coro` inward, outermost first (the walker's await chain).
    std::vector<Link> chain(uint64_t coro) { return walker_.awaitChain(coro, kMaxChain); }

    // Locks whose bound __aexit__ a suspended frame keeps on its value stack: it is inside the body
    // of `async with <lock>:`. The entry just below an awaited __aenter__ coroutine is the pending
    // `async with` of the lock it waits for, not one it holds.
    void heldLocks(const Link& link, std::vector<uint64_t>* out) {
        auto stack = frames_.valueStack(link.frame, kMaxStack);
        uint64_t awaited = link.awaited;
        bool pendingEnter = false;
        uint64_t entering = 0;  // 3.14+: the object whose __aenter__ is awaited (its self)
        if (awaited && typeName(awaited) == "coroutine")
            if (uint64_t f = frames_.generatorFrame(awaited)) {
                auto read = frames_.readFrom(f, 1, nullptr);
                pendingEnter = !read.empty() && read.front().function == "__aenter__";
                if (pendingEnter) {
                    auto locals = frames_.locals(f, 1);
                    entering = locals.empty() ? 0 : locals.front().value;
                }
            }
        // 3.14+: the stack's depth of the pending `async with` differs between releases (3.15
        // keeps more above it); the highest pair whose object is the one being entered is it.
        size_t pendingAt = stack.size();
        if (cl_.minor >= 14 && entering)
            for (size_t i = stack.size(); i-- > 1;)
                if (stack[i] == entering && stack[i - 1] && typeName(stack[i - 1]) == "function") {
                    pendingAt = i - 1;
                    break;
                }
        for (size_t i = 0; i < stack.size(); ++i) {
            uint64_t obj = stack[i], func = 0, self = 0;
            if (!obj) continue;
            if (cl_.minor >= 14) {
                // 3.14+ (LOAD_SPECIAL): the unbound __aexit__ function, then the object itself.
                if (i + 1 >= stack.size() || typeName(obj) != "function") continue;
                if (i == pendingAt) continue;
                func = obj, self = stack[i + 1];
            } else {
                if (pendingEnter && i + 2 == stack.size()) continue;
                if (typeName(obj) != "method") continue;
                uint64_t fields = static_cast<uint64_t>(cl_.objectFields());  // PyMethodObject: im_func, im_self
                func = ptr(obj + fields), self = ptr(obj + fields + 8);
            }
            if (str(ptr(func + a_.funcName), 32) != "__aexit__") continue;
            const std::string& kind = typeName(self);
            if (kind == "Lock" || kind == "Semaphore" || kind == "BoundedSemaphore" || kind == "Condition") out->push_back(self);
        }
    }

    // What a pending task waits on: its fut_waiter, named by the asyncio frame that awaits it.
    std::optional<StackWait> awaits(uint64_t waiter, const std::vector<Link>& links) {
        if (!waiter) return std::nullopt;
        StackWait w;
        w.future = waiter;
        w.object = waiter;
        if (kindOf(waiter) == TypeKind::Task) {
            w.kind = "task";
            w.task = waiter;
            return w;
        }
        if (typeName(waiter) == "_GatheringFuture") {
            w.kind = "gather";
            return w;
        }
        w.kind = "future";
        if (links.empty()) return w;
        const Link& inner = links.back();
        const std::string& file = inner.shown.file;
        if (!isAsyncioFile(file)) return w;
        if (baseName(file) == "tasks.py" && inner.shown.function == "sleep") {
            w.kind = "sleep";
            return w;
        }
        auto locals = frames_.locals(inner.frame, 1);
        uint64_t self = locals.empty() ? 0 : locals.front().value;
        static const std::map<std::string, std::string> kinds = {
            {"Event", "event"},         {"Lock", "lock"},          {"Condition", "condition"}, {"Semaphore", "semaphore"},
            {"BoundedSemaphore", "semaphore"}, {"Queue", "queue"}, {"LifoQueue", "queue"},     {"PriorityQueue", "queue"},
            {"Barrier", "other"}};
        auto it = self ? kinds.find(typeName(self)) : kinds.end();
        if (it != kinds.end()) {
            w.kind = it->second;
            w.object = self;
        }
        return w;
    }

    // The callbacks a future will call when done: (fut_callback0, then fut_callbacks' (callback, context) pairs).
    std::vector<uint64_t> callbacks(uint64_t future) {
        std::vector<uint64_t> out;
        if (uint64_t first = ptr(future + a_.futCallback0)) out.push_back(first);
        uint64_t list = ptr(future + a_.futCallbacks);
        auto n = list ? t_.readValue<int64_t>(list + 16) : std::nullopt;  // PyListObject: ob_size, ob_item
        uint64_t items = list ? ptr(list + 24) : 0;
        for (int64_t i = 0; n && items && i < *n && i < static_cast<int64_t>(kMaxCallbacks); ++i)
            if (uint64_t pair = ptr(items + 8 * i)) out.push_back(ptr(pair + 24));  // the tuple's first item
        return out;
    }

    // What a done callback passes a future's end on to, read from the callback object: the rules
    // follow CPython's asyncio (Lib/asyncio/tasks.py, taskgroups.py and Modules/_asynciomodule.c of
    // 3.9 to 3.15; line numbers are 3.13.0's unless said).
    struct Feed {
        uint64_t task = 0;    // a task woken (its awaiter), or a TaskGroup's parent task
        uint64_t future = 0;  // a future it completes (a gather's, shield's or wait's)
        std::string via;      // task|taskgroup|gather|shield|wait|wait_for
        bool all = true;      // the future waits for every one it is fed by (not the first to end)
    };
    // Per callback object: a gather's children share one _done_callback, a wait's one _on_completion.
    const std::vector<Feed>& feeds(uint64_t callback) {
        auto it = feeds_.find(callback);
        if (it == feeds_.end()) it = feeds_.emplace(callback, readFeeds(callback)).first;
        return it->second;
    }
    std::vector<Feed> readFeeds(uint64_t callback) {
        std::vector<Feed> out;
        const std::string& type = typeName(callback);
        if (type == "builtin_function_or_method" || type == "method") {
            uint64_t self = ptr(callback + 24);  // PyCFunctionObject.m_self, PyMethodObject.im_self
            if (kindOf(self) == TypeKind::Task) {
                // A task awaiting this future: Task.__step's `result.add_done_callback(self.__wakeup)`
                // (tasks.py:341; _asynciomodule.c task_step_handle_result_impl, task_wakeup bound to it).
                out.push_back({self, 0, "task", true});
            } else if (type == "method" && objects_.isInstance(self, "TaskGroup")) {
                // TaskGroup.create_task: `task.add_done_callback(self._on_task_done)` (taskgroups.py:184);
                // 3.14 records `future_add_to_awaited_by(task, self._parent_task)` (3.14 taskgroups.py:198).
                // Its exit awaits _on_completed_fut, which _on_task_done completes when no task is left.
                Feed f{0, 0, "taskgroup", true};
                if (auto parent = attribute(self, "_parent_task"); parent && kindOf(*parent) == TypeKind::Task) f.task = *parent;
                if (auto done = attribute(self, "_on_completed_fut"); done && kindOf(*done) == TypeKind::Future) f.future = *done;
                if (f.task || f.future) out.push_back(f);
            }
        } else if (type == "TaskWakeupMethWrapper") {
            uint64_t self = ptr(callback + 16);  // <= 3.9: TaskWakeupMethWrapper.ww_task
            if (kindOf(self) == TypeKind::Task) out.push_back({self, 0, "task", true});
        } else if (type == "function" && a_.funcClosure >= 0) {
            std::string name = str(ptr(callback + a_.funcName), 32);
            const char* via = name == "_done_callback" ? "gather"            // gather: fut.add_done_callback(_done_callback) (tasks.py:899)
                            : name == "_inner_done_callback" ? "shield"      // shield: inner.add_done_callback(...) (tasks.py:979)
                            : name == "_on_completion" ? "wait" : nullptr;  // _wait: f.add_done_callback(_on_completion) (tasks.py:534)
            if (!via) return out;
            // The future it completes is in its closure: gather's `outer` (a _GatheringFuture),
            // shield's `outer`, _wait's `waiter`; _wait's `return_when` says whether it waits for all.
            Feed f{0, 0, via, true};
            bool allCompleted = false;
            uint64_t closure = ptr(callback + a_.funcClosure);
            auto n = closure ? t_.readValue<int64_t>(closure + 16) : std::nullopt;
            for (int64_t i = 0; n && i < *n && i < 64; ++i) {
                uint64_t value = ptr(ptr(closure + 24 + 8 * i) + 16);  // cell.ob_ref
                if (!value) continue;
                if (kindOf(value) == TypeKind::Future && (f.via != std::string("gather") || typeName(value) == "_GatheringFuture")) f.future = value;
                else if (typeName(value) == "str" && str(value, 16) == "ALL_COMPLETED") allCompleted = true;
            }
            f.all = f.via != std::string("wait") || allCompleted;
            if (f.future) out.push_back(f);
        } else if (type == "functools.partial") {
            // <= 3.11 wait_for: `cb = functools.partial(_release_waiter, waiter); fut.add_done_callback(cb)`
            // (3.11.7 tasks.py:468-471), then `await waiter`; also _cancel_and_wait's.
            uint64_t fn = ptr(callback + 16), args = ptr(callback + 24);  // partialobject: fn, args
            if (typeName(fn) != "function" || str(ptr(fn + a_.funcName), 32) != "_release_waiter") return out;
            auto items = objects_.tupleItems(args, 1);
            if (items && !items->empty() && kindOf(items->front()) == TypeKind::Future) out.push_back({0, items->front(), "wait_for", true});
        }
        return out;
    }

    int futureState(uint64_t future) { return t_.readValue<int32_t>(future + a_.futState).value_or(-1); }

    // 3.14+: who CPython records as awaiting `future` (FutureObj.fut_awaited_by: one object, or a
    // set when fut_awaited_by_is_set; _asynciomodule.c future_awaited_by_add).
    std::vector<uint64_t> recordedAwaitedBy(uint64_t future) {
        std::vector<uint64_t> out;
        if (a_.futAwaitedBy < 0 || a_.futAwaitedByIsSet < 0) return out;
        uint64_t by = ptr(future + a_.futAwaitedBy);
        if (!by) return out;
        if (t_.readValue<uint8_t>(future + a_.futAwaitedByIsSet).value_or(0)) {
            if (auto items = objects_.setItems(by, kMaxCallbacks)) out = *items;
        } else {
            out.push_back(by);
        }
        return out;
    }

    // The loop's timers: loop._scheduled (a heap of TimerHandles), each one's _when unless it is
    // cancelled (a cancelled one stays in the heap until the loop pops it).
    std::optional<std::vector<double>> timers(uint64_t loop) {
        auto scheduled = objects_.attribute(loop, "_scheduled");
        auto items = scheduled && *scheduled ? objects_.listItems(*scheduled, kMaxTimers) : std::nullopt;
        if (!items) return std::nullopt;
        std::vector<double> whens;
        for (uint64_t handle : *items) {
            uint64_t type = ptr(handle + cl_.objectType);
            auto when = slotOffset(type, "_when");
            auto cancelled = slotOffset(type, "_cancelled");
            if (!when || !cancelled) return std::nullopt;  // not a TimerHandle as asyncio makes them
            auto value = objects_.floating(ptr(handle + *when));
            if (!value) return std::nullopt;
            if (!objects_.boolean(ptr(handle + *cancelled)).value_or(false)) whens.push_back(*value);
        }
        std::sort(whens.begin(), whens.end());
        return whens;
    }

    std::optional<uint64_t> attribute(uint64_t object, const std::string& name) { return objects_.attribute(object, name); }
    std::optional<int64_t> integer(uint64_t object) { return objects_.integer(object); }

    FrameReader& frames() { return frames_; }
    StackWalker& walker() { return walker_; }
    const ObjectReader& objects() const { return objects_; }
    const AsyncioLayout& layout() const { return a_; }

private:
    // Where a __slots__ member of instances of `type` is (TimerHandle's _when, Handle's _cancelled):
    // the PyMemberDef array (tp_members, just before tp_getset and tp_base) of the type or a base,
    // which a class with __slots__ keeps in its heap type. {name, type, offset, flags, doc}: 40 bytes.
    std::optional<int64_t> slotOffset(uint64_t type, const std::string& name) {
        auto key = std::make_pair(type, name);
        auto known = slots_.find(key);
        if (known != slots_.end()) return known->second;
        std::optional<int64_t> found;
        uint64_t t = type;
        for (size_t depth = 0; t && depth < kMaxTypeChain && !found; ++depth, t = ptr(t + cl_.typeBase)) {
            uint64_t members = ptr(t + cl_.typeBase - 16);
            for (size_t i = 0; members && i < kMaxMembers; ++i) {
                uint64_t n = ptr(members + 40 * i);
                if (!n) break;
                if (t_.readCString(n, 64).value_or("") != name) continue;
                auto offset = t_.readValue<int64_t>(members + 40 * i + 16);
                if (offset && *offset > 0 && *offset < 4096) found = offset;
                break;
            }
        }
        return slots_[key] = found;
    }

    const Target& t_;
    const CPythonLayout& cl_;
    const AsyncioLayout& a_;
    StackWalker walker_;  // reads every task's frames (one walker for tasks and greenlets)
    FrameReader& frames_;
    ObjectReader objects_;
    std::unordered_map<uint64_t, std::string> typeNames_;
    std::unordered_map<uint64_t, TypeKind> typeKinds_;
    std::map<std::pair<uint64_t, std::string>, std::optional<int64_t>> slots_;
    std::unordered_map<uint64_t, std::vector<Feed>> feeds_;
};

bool hasAsyncioModule(const Target& target) {
    for (const auto& m : target.modules())
        if (baseName(m.path).rfind("_asyncio.", 0) == 0) return true;
    return false;
}

// Who awaits each task and whom each pending task waits for, from the done callbacks of the tasks
// and of the futures those complete (Reader::feeds names the CPython lines each rule follows).
class TaskLinks {
public:
    TaskLinks(Reader& r, const AsyncioScan& scan, const std::map<uint64_t, size_t>& index) : scan_(scan), index_(index) {
        for (const auto& t : scan.tasks)
            if (t.waitsOn) awaiting_[t.waitsOn->future].push_back(t.address);
        // Every object whose end passes on: the tasks, then the futures their callbacks complete
        // (a gather's future in a gather of gathers passes its own end on to the outer one).
        std::vector<uint64_t> todo;
        for (const auto& t : scan.tasks) todo.push_back(t.address);
        for (size_t i = 0; i < todo.size() && i < kMaxLinked; ++i) {
            uint64_t x = todo[i];
            if (feeds_.count(x)) continue;
            auto& out = feeds_[x];
            for (uint64_t cb : r.callbacks(x))
                for (const auto& f : r.feeds(cb)) {
                    if (f.future) {
                        fedBy_[f.future].push_back({x, f});
                        if (!feeds_.count(f.future)) todo.push_back(f.future);
                    }
                    out.push_back(f);
                }
        }
    }

    // Tasks awaiting `x` as CPython 3.14 records them: the task a callback wakes (it awaits x), a
    // TaskGroup's parent task, and whoever awaits the future x completes (gather, shield, wait, wait_for).
    std::vector<uint64_t> awaitedBy(uint64_t x) {
        std::set<uint64_t> by;
        for (const auto& f : feedsOf(x)) {
            if (f.task) by.insert(f.task);
            else if (f.future) awaitersOf(f.future, 0, &by);
        }
        return {by.begin(), by.end()};
    }

    // The tasks a pending task awaiting `future` cannot resume before (TaskAwaitEdge).
    std::vector<TaskAwaitEdge> waitsFor(uint64_t future) {
        std::vector<TaskAwaitEdge> out;
        if (index_.count(future)) {
            out.push_back({future, "task", future});
            return out;
        }
        std::set<uint64_t> seen;
        completers(future, future, "", 0, &seen, &out);
        return out;
    }

private:
    static constexpr size_t kMaxLinked = 1 << 17;  // objects followed (tasks and futures)
    static constexpr int kMaxDepth = 64;           // futures completing futures

    const std::vector<Reader::Feed>& feedsOf(uint64_t x) {
        static const std::vector<Reader::Feed> none;
        auto it = feeds_.find(x);
        return it == feeds_.end() ? none : it->second;
    }

    void awaitersOf(uint64_t future, int depth, std::set<uint64_t>* by) {
        if (depth > kMaxDepth) return;
        auto a = awaiting_.find(future);
        if (a != awaiting_.end()) by->insert(a->second.begin(), a->second.end());
        for (const auto& f : feedsOf(future)) {
            if (f.task) by->insert(f.task);
            else if (f.future) awaitersOf(f.future, depth + 1, by);
        }
    }

    // What completes `future`: the tasks whose end it waits for (all of them: a gather, a shield,
    // wait_for, a TaskGroup's exit, asyncio.wait with ALL_COMPLETED; asyncio.wait for the first of
    // several is left out: any one of them ends it), through futures completing futures.
    void completers(uint64_t awaited, uint64_t future, const std::string& via, int depth, std::set<uint64_t>* seen,
                    std::vector<TaskAwaitEdge>* out) {
        if (depth > kMaxDepth || !seen->insert(future).second) return;
        auto it = fedBy_.find(future);
        if (it == fedBy_.end()) return;
        for (const auto& [x, f] : it->second) {
            if (!f.all && it->second.size() > 1) return;
            std::string how = via.empty() ? f.via : via;  // the kind of the future the task awaits
            if (index_.count(x)) {
                const AsyncioTask& t = scan_.tasks[index_.at(x)];
                if (t.state != "done" && t.state != "cancelled") out->push_back({x, how, awaited});
            } else {
                completers(awaited, x, how, depth + 1, seen, out);
            }
        }
    }

    const AsyncioScan& scan_;
    const std::map<uint64_t, size_t>& index_;
    std::map<uint64_t, std::vector<uint64_t>> awaiting_;  // future -> pending tasks whose fut_waiter it is
    std::map<uint64_t, std::vector<Reader::Feed>> feeds_;
    std::map<uint64_t, std::vector<std::pair<uint64_t, Reader::Feed>>> fedBy_;  // future -> (object, its feed)
};

void linkTasks(Reader& r, AsyncioScan* scan, const std::map<uint64_t, size_t>& index) {
    TaskLinks links(r, *scan, index);
    bool recorded = r.layout().futAwaitedBy >= 0;  // 3.14+: CPython's own record
    for (auto& task : scan->tasks) {
        if (recorded) {
            std::set<uint64_t> by;
            for (uint64_t x : r.recordedAwaitedBy(task.address))
                if (index.count(x)) by.insert(x);
            task.awaitedBy.assign(by.begin(), by.end());
        } else {
            task.awaitedBy = links.awaitedBy(task.address);
        }
        if (task.waitsOn) task.waitsFor = links.waitsFor(task.waitsOn->future);
    }
}

}  // namespace

bool isAsyncioFile(const std::string& file) {
    static const std::set<std::string> modules = {
        "base_events.py", "base_futures.py", "base_subprocess.py", "base_tasks.py", "events.py", "exceptions.py",
        "futures.py", "locks.py", "mixins.py", "proactor_events.py", "queues.py", "runners.py", "selector_events.py",
        "sslproto.py", "staggered.py", "streams.py", "subprocess.py", "taskgroups.py", "tasks.py", "timeouts.py",
        "threads.py", "transports.py", "trsock.py", "unix_events.py", "coroutines.py", "graph.py", "tools.py"};
    auto slash = file.rfind('/');
    if (slash == std::string::npos || !modules.count(file.substr(slash + 1))) return false;
    return slash >= 8 && file.compare(slash - 8, 9, "/asyncio/") == 0;
}

std::optional<AsyncioScan> scanAsyncio(const Target& target, const Runtime& rt, size_t runtimeIndex, const AsyncioLayout& layout) {
    AsyncioScan scan;
    scan.runtimeIndex = runtimeIndex;
    scan.layoutSource = layout.source;
    scan.clock = target.monotonicNow();
    if (!layout.known) {
        if (!hasAsyncioModule(target)) return std::nullopt;
        scan.problem = layout.source;
        return scan;
    }
    const CPythonLayout& cl = rt.layout;
    Reader r(target, rt, layout);

    // Where each thread state's frames are: a task whose coroutine frame is on one runs there.
    std::unordered_map<uint64_t, uint64_t> liveFrames;  // frame -> thread state
    std::map<uint64_t, AsyncioLoop> loops;              // by address
    std::unordered_map<uint64_t, uint64_t> runningTasks;  // 3.14+: asyncio_running_task -> its thread state
    for (const auto& interp : rt.interpreters)
        for (const auto& ts : interp.tstates) {
            size_t n = 0;
            r.frames().chain(ts.address, [&](uint64_t frame) {
                liveFrames.emplace(frame, ts.address);
                return ++n < kMaxPythonFrames;
            });
            // The running loop: 3.14+ in the thread state itself, before in its dict (<= 3.11 in a
            // holder, 3.12-3.13 itself).
            uint64_t loop = 0, runningTask = 0;
            if (layout.tstateRunningLoop >= 0) {
                loop = r.ptr(ts.address + layout.tstateRunningLoop);
                if (layout.tstateRunningTask >= 0) runningTask = r.ptr(ts.address + layout.tstateRunningTask);
            } else {
                uint64_t dict = r.ptr(ts.address + layout.tstateDict);
                auto held = dict ? lookupPyDict(target, cl, dict, "__asyncio_running_event_loop__") : std::nullopt;
                loop = held ? (layout.holderLoop >= 0 ? r.ptr(*held + layout.holderLoop) : *held) : 0;
            }
            if (runningTask) runningTasks[runningTask] = ts.address;
            if (!loop || r.typeName(loop) == "NoneType") continue;
            AsyncioLoop& l = loops[loop];
            l.address = loop;
            l.interp = interp.address;
            l.tstate = ts.address;
        }

    // Every task the collector tracks.
    std::vector<uint64_t> found;
    std::map<uint64_t, uint64_t> interpOf;
    bool gcKnown = cl.gcGenerations != kAbsent && !cl.freeThreaded;
    if (!gcKnown) {
        scan.problem = "the collector's lists are not known for this build: tasks are not found";
        return scan;
    }
    for (const auto& interp : rt.interpreters) {
        uint64_t gcState = cl.gcInRuntime ? rt.address : interp.address;
        GcWalk walk = walkGcObjects(target, cl, gcState, [&](uint64_t object, uint64_t type) {
            if (r.kindOfType(type) == TypeKind::Task) {
                found.push_back(object);
                interpOf[object] = interp.address;
            }
        });
        scan.gcObjects += walk.objects;
        if (!walk.problem.empty()) scan.problem = "the collector's lists: " + walk.problem;
        if (cl.gcInRuntime) break;
    }
    if (found.empty() && loops.empty() && !hasAsyncioModule(target)) return std::nullopt;

    std::map<uint64_t, size_t> index;  // task address -> scan.tasks
    scan.tasks.reserve(found.size());
    for (uint64_t address : found) {
        AsyncioTask task;
        task.address = address;
        task.interp = interpOf[address];
        task.loop = r.ptr(address + layout.futLoop);
        task.coro = r.ptr(address + layout.taskCoro);
        uint64_t name = r.ptr(address + layout.taskName);
        task.name = r.objects().str(name, kMaxTaskName, &task.nameCut).value_or("");
        if (task.name.empty() && name) {
            // 3.12+ names a task lazily: a counter, shown as get_name() does ("Task-3").
            auto n = r.typeName(name) == "int" ? r.integer(name) : std::nullopt;
            task.name = n ? "Task-" + std::to_string(*n) : "<" + r.typeName(name) + ">";
        }
        int state = r.futureState(address);
        task.state = state == layout.statePending ? "pending" : state == layout.stateCancelled ? "cancelled"
                   : state == layout.stateFinished ? "done" : "unknown";
        uint64_t coroFrame = task.coro ? r.frames().generatorFrame(task.coro) : 0;
        if (task.state == "pending" && coroFrame) {
            auto live = liveFrames.find(coroFrame);
            if (live != liveFrames.end()) {
                task.state = "running";
                task.tstate = live->second;
            } else if (auto on = runningTasks.find(address); on != runningTasks.end()) {
                task.state = "running";  // 3.14+: the thread state names it
                task.tstate = on->second;
            }
        }
        if (task.state == "running") {
            // Its frames are the thread's, from the innermost to its coroutine's.
            task.frames = r.walker().onThread(task.tstate, coroFrame, kMaxPythonFrames, &task.note);
        } else if (task.state == "pending") {
            auto chain = r.chain(task.coro);
            for (const auto& link : chain) r.heldLocks(link, &task.holds);
            uint64_t waiter = r.ptr(address + layout.taskFutWaiter);
            // Ready: its step is queued. The future it awaited is done (set_result scheduled the
            // task's wakeup, which clears fut_waiter when it runs: _asynciomodule.c task_step_impl),
            // or it awaits none (a new task, or one after a bare yield: call_soon(task_step)).
            if (!waiter || r.futureState(waiter) != layout.statePending) task.state = "ready";
            else task.waitsOn = r.awaits(waiter, chain);
            task.frames = StackWalker::framesOf(std::move(chain), kMaxPythonFrames);  // last: its frames move
        }
        if (task.loop) {
            AsyncioLoop& l = loops[task.loop];
            l.address = task.loop;
            if (!l.interp) l.interp = task.interp;
            if (task.state == "running" && task.tstate == l.tstate) l.runningTask = address;
            l.tasks.push_back(scan.tasks.size());
        }
        index[address] = scan.tasks.size();
        scan.tasks.push_back(std::move(task));
    }
    linkTasks(r, &scan, index);
    // A loop with tasks whose thread state dict does not say it runs: BaseEventLoop._thread_id is
    // the ident (pthread_t) of the thread running it, None when it does not run.
    for (auto& [address, loop] : loops) {
        auto ident = r.attribute(address, "_thread_id");
        auto value = ident && *ident && r.typeName(*ident) == "int" ? r.integer(*ident) : std::nullopt;
        if (value) loop.threadIdent = static_cast<uint64_t>(*value);
        if (loop.tstate) continue;
        for (const auto& interp : rt.interpreters)
            for (const auto& ts : interp.tstates)
                if (value && ts.threadId == static_cast<uint64_t>(*value)) loop.tstate = ts.address;
        for (size_t i : loop.tasks)
            if (scan.tasks[i].state == "running" && scan.tasks[i].tstate == loop.tstate) loop.runningTask = scan.tasks[i].address;
    }
    for (auto& [address, loop] : loops) {
        if (auto ready = r.attribute(address, "_ready"); ready && *ready && r.typeName(*ready) == "collections.deque")
            if (auto n = target.readValue<int64_t>(*ready + 16); n && *n >= 0) loop.ready = static_cast<size_t>(*n);
        loop.timers = r.timers(address);
        scan.loops.push_back(loop);
    }
    return scan;
}

}  // namespace pytstates
