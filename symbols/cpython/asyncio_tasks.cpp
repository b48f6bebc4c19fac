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
        uint64_t awaited = frames_.yieldFrom(link.coro);
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
                func = ptr(obj + 16), self = ptr(obj + 24);  // PyMethodObject: im_func, im_self
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

    // Who a callback wakes: a task (its task_wakeup bound to it) or a gather's outer future (the
    // `outer` cell of gather's _done_callback closure).
    void wakes(uint64_t callback, uint64_t* task, uint64_t* gather) {
        const std::string& type = typeName(callback);
        if (type == "builtin_function_or_method" || type == "method") {
            uint64_t self = ptr(callback + 24);  // PyCFunctionObject.m_self, PyMethodObject.im_self
            if (kindOf(self) == TypeKind::Task) *task = self;
        } else if (type == "TaskWakeupMethWrapper") {
            uint64_t self = ptr(callback + 16);  // <= 3.9: TaskWakeupMethWrapper.ww_task
            if (kindOf(self) == TypeKind::Task) *task = self;
        } else if (type == "function" && a_.funcClosure >= 0) {
            uint64_t closure = ptr(callback + a_.funcClosure);
            auto n = closure ? t_.readValue<int64_t>(closure + 16) : std::nullopt;
            for (int64_t i = 0; n && i < *n && i < 64; ++i) {
                uint64_t value = ptr(ptr(closure + 24 + 8 * i) + 16);  // cell.ob_ref
                if (value && typeName(value) == "_GatheringFuture") *gather = value;
            }
        }
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
};

bool hasAsyncioModule(const Target& target) {
    for (const auto& m : target.modules())
        if (baseName(m.path).rfind("_asyncio.", 0) == 0) return true;
    return false;
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
    std::map<uint64_t, std::vector<Reader::Link>> links;
    for (uint64_t address : found) {
        AsyncioTask task;
        task.address = address;
        task.interp = interpOf[address];
        task.loop = r.ptr(address + layout.futLoop);
        task.coro = r.ptr(address + layout.taskCoro);
        uint64_t name = r.ptr(address + layout.taskName);
        task.name = r.str(name, 200);
        if (task.name.empty() && name) {
            // 3.12+ names a task lazily: a counter, shown as get_name() does ("Task-3").
            auto n = r.typeName(name) == "int" ? r.integer(name) : std::nullopt;
            task.name = n ? "Task-" + std::to_string(*n) : "<" + r.typeName(name) + ">";
        }
        int state = target.readValue<int32_t>(address + layout.futState).value_or(-1);
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
            task.frames = StackWalker::framesOf(chain, kMaxPythonFrames);
            for (const auto& link : chain) r.heldLocks(link, &task.holds);
            task.waitsOn = r.awaits(r.ptr(address + layout.taskFutWaiter), chain);
            links[address] = std::move(chain);
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
    // Who awaits each task: the task its callbacks wake, or the tasks awaiting the gather it is in.
    std::map<uint64_t, std::vector<uint64_t>> gatherWaiters;  // gather future -> tasks awaiting it
    for (const auto& task : scan.tasks)
        if (task.waitsOn && task.waitsOn->kind == "gather") gatherWaiters[task.waitsOn->future].push_back(task.address);
    for (auto& task : scan.tasks) {
        std::set<uint64_t> by;
        for (uint64_t cb : r.callbacks(task.address)) {
            uint64_t waker = 0, gather = 0;
            r.wakes(cb, &waker, &gather);
            if (waker) by.insert(waker);
            if (gather)
                for (uint64_t t : gatherWaiters[gather]) by.insert(t);
        }
        task.awaitedBy.assign(by.begin(), by.end());
    }
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
