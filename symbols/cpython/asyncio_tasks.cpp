// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/asyncio_tasks.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "symbols/cpython/gc_objects.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/text/base_name.h"

namespace pytstates {

namespace {

constexpr size_t kMaxChain = 256;       // coroutines awaiting coroutines, per task
constexpr size_t kMaxTaskFrames = 64;   // a task's frames shown (its whole chain, up to this)
constexpr size_t kMaxStack = 4096;      // value-stack entries of one frame looked at
constexpr size_t kMaxCallbacks = 4096;  // a future's callbacks read
constexpr size_t kMaxTypeChain = 64;
constexpr size_t kMaxThreadFrames = 4096;

enum class TypeKind { Other, Task, Future };

class Reader {
public:
    Reader(const Target& target, const Runtime& rt, const AsyncioLayout& layout)
        : t_(target), rt_(rt), cl_(rt.layout), a_(layout), frames_(target, rt.layout) {}

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

    // The object a suspended coroutine's frame awaits (_PyGen_yf): its next instruction resumes an
    // await or yield from, and the awaited object is on top of its saved value stack.
    uint64_t awaitedObject(uint64_t iframe, int frameState) {
        if (frameState != a_.frameSuspended) return 0;
        uint64_t prevInstr = ptr(iframe + cl_.frameInstr);
        auto next = prevInstr ? t_.readValue<uint16_t>(prevInstr + 2) : std::nullopt;
        if (!next || (*next & 0xff) != a_.resumeOpcode || (*next >> 8) < 2) return 0;
        auto top = t_.readValue<int32_t>(iframe + a_.frameStacktop);
        if (!top || *top <= 0 || *top > 1 << 20) return 0;
        return ptr(iframe + a_.frameLocalsplus + 8 * (*top - 1));
    }

    struct Link {
        uint64_t coro = 0, iframe = 0;
        int state = 0;
        PyFrame frame;
    };
    // The coroutine chain from `coro` inward, outermost first; *awaited: what the innermost awaits
    // that is not a coroutine (a FutureIter, a future), 0 when none.
    std::vector<Link> chain(uint64_t coro, uint64_t* awaited) {
        std::vector<Link> links;
        std::set<uint64_t> seen;
        *awaited = 0;
        while (coro && links.size() < kMaxChain && seen.insert(coro).second) {
            const std::string& type = typeName(coro);
            if (type != "coroutine" && type != "generator") {
                *awaited = coro;
                break;
            }
            Link link;
            link.coro = coro;
            link.iframe = coro + a_.genIframe;
            link.state = t_.readValue<int8_t>(coro + a_.genFrameState).value_or(127);
            if (link.state > 0) break;  // completed or cleared: no frame left
            auto read = frames_.readFrom(link.iframe, 1, nullptr);
            if (read.empty()) break;
            link.frame = read.front();
            links.push_back(link);
            coro = awaitedObject(link.iframe, link.state);
        }
        return links;
    }

    // The frame's locals+stack slot i (3.11: localsplus[i]); 0 when unreadable.
    uint64_t slot(uint64_t iframe, int64_t i) { return ptr(iframe + a_.frameLocalsplus + 8 * i); }
    int nlocalsplus(uint64_t iframe) {
        uint64_t code = ptr(iframe + cl_.frameCode);
        return code ? t_.readValue<int32_t>(code + a_.codeNlocalsplus).value_or(-1) : -1;
    }

    // Locks whose bound __aexit__ a suspended frame keeps on its value stack: it is inside the body
    // of `async with <lock>:`. The entry just below an awaited __aenter__ coroutine is the pending
    // `async with` of the lock it waits for, not one it holds.
    void heldLocks(const Link& link, std::vector<uint64_t>* out) {
        if (link.state != a_.frameSuspended) return;
        int locals = nlocalsplus(link.iframe);
        auto top = t_.readValue<int32_t>(link.iframe + a_.frameStacktop);
        if (locals < 0 || !top || *top <= locals || *top - locals > static_cast<int>(kMaxStack)) return;
        uint64_t awaited = awaitedObject(link.iframe, link.state);
        bool pendingEnter = awaited && typeName(awaited) == "coroutine" &&
                            str(ptr(awaited + 32 /* cr_name */), 32) == "__aenter__";
        for (int i = locals; i < *top; ++i) {
            if (pendingEnter && i == *top - 2) continue;
            uint64_t obj = slot(link.iframe, i);
            if (!obj || typeName(obj) != "method") continue;
            uint64_t func = ptr(obj + 16), self = ptr(obj + 24);
            if (str(ptr(func + a_.funcName), 32) != "__aexit__") continue;
            const std::string& kind = typeName(self);
            if (kind == "Lock" || kind == "Semaphore" || kind == "BoundedSemaphore" || kind == "Condition") out->push_back(self);
        }
    }

    // What a pending task waits on: its fut_waiter, named by the asyncio frame that awaits it.
    std::optional<AsyncioAwait> awaits(uint64_t waiter, const std::vector<Link>& links) {
        if (!waiter) return std::nullopt;
        AsyncioAwait w;
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
        const std::string& file = inner.frame.file;
        if (!isAsyncioFile(file)) return w;
        if (baseName(file) == "tasks.py" && inner.frame.function == "sleep") {
            w.kind = "sleep";
            return w;
        }
        uint64_t self = nlocalsplus(inner.iframe) > 0 ? slot(inner.iframe, 0) : 0;
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
        } else if (type == "function" && a_.funcClosure >= 0) {
            uint64_t closure = ptr(callback + a_.funcClosure);
            auto n = closure ? t_.readValue<int64_t>(closure + 16) : std::nullopt;
            for (int64_t i = 0; n && i < *n && i < 64; ++i) {
                uint64_t value = ptr(ptr(closure + 24 + 8 * i) + 16);  // cell.ob_ref
                if (value && typeName(value) == "_GatheringFuture") *gather = value;
            }
        }
    }

    // An attribute of a plain Python object (3.11: its managed values with the type's shared keys,
    // else its managed dict).
    std::optional<uint64_t> attribute(uint64_t object, const std::string& name) {
        uint64_t values = ptr(object + a_.managedValues);
        if (values) {
            uint64_t type = ptr(object + cl_.objectType);
            uint64_t keys = ptr(type + a_.heapTypeCachedKeys);
            auto n = keys ? t_.readValue<int64_t>(keys + cl_.dictKeysNentries) : std::nullopt;
            auto log2Index = keys ? t_.readValue<uint8_t>(keys + cl_.dictKeysIndexBytes) : std::nullopt;
            if (!n || !log2Index || *n < 0 || *n > 4096 || *log2Index > 20) return std::nullopt;
            uint64_t entries = keys + cl_.dictKeysIndices + (uint64_t(1) << *log2Index);
            for (int64_t i = 0; i < *n; ++i)
                if (str(ptr(entries + 16 * i), name.size() + 1) == name) return ptr(values + 8 * i);
            return std::nullopt;
        }
        uint64_t dict = ptr(object + a_.managedDict);
        return dict ? lookupPyDict(t_, cl_, dict, name) : std::nullopt;
    }

    FrameReader& frames() { return frames_; }
    const AsyncioLayout& layout() const { return a_; }

private:
    const Target& t_;
    const Runtime& rt_;
    const CPythonLayout& cl_;
    const AsyncioLayout& a_;
    FrameReader frames_;
    std::unordered_map<uint64_t, std::string> typeNames_;
    std::unordered_map<uint64_t, TypeKind> typeKinds_;
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

std::optional<AsyncioScan> scanAsyncio(const Target& target, const Runtime& rt, size_t runtimeIndex, const AsyncioLayout& layout,
                                       size_t maxFrames) {
    (void)maxFrames;  // a task's chain is shown whole (up to kMaxTaskFrames): it is what the task is
    AsyncioScan scan;
    scan.runtimeIndex = runtimeIndex;
    scan.layoutSource = layout.source;
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
    for (const auto& interp : rt.interpreters)
        for (const auto& ts : interp.tstates) {
            size_t n = 0;
            r.frames().chain(ts.address, [&](uint64_t frame) {
                liveFrames.emplace(frame, ts.address);
                return ++n < kMaxThreadFrames;
            });
            uint64_t dict = r.ptr(ts.address + layout.tstateDict);
            auto holder = dict ? lookupPyDict(target, cl, dict, "__asyncio_running_event_loop__") : std::nullopt;
            uint64_t loop = holder ? r.ptr(*holder + layout.holderLoop) : 0;
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
        if (task.name.empty() && name) task.name = "<" + r.typeName(name) + ">";
        int state = target.readValue<int32_t>(address + layout.futState).value_or(-1);
        task.state = state == layout.statePending ? "pending" : state == layout.stateCancelled ? "cancelled"
                   : state == layout.stateFinished ? "done" : "unknown";
        if (task.state == "pending" && task.coro) {
            auto live = liveFrames.find(task.coro + layout.genIframe);
            if (live != liveFrames.end() && target.readValue<int8_t>(task.coro + layout.genFrameState).value_or(0) == 0) {
                task.state = "running";
                task.runningOn = live->second;
            }
        }
        if (task.state == "running") {
            // Its frames are the thread's, from the innermost to its coroutine's.
            std::string note;
            auto frames = r.frames().readFrom(r.frames().topFrame(task.runningOn), kMaxThreadFrames, &note);
            for (const auto& f : frames) {
                if (task.frames.size() < kMaxTaskFrames) task.frames.push_back(f);
                if (f.address == task.coro + layout.genIframe) break;
            }
        } else if (task.state == "pending") {
            uint64_t awaited = 0;
            auto chain = r.chain(task.coro, &awaited);
            for (auto it = chain.rbegin(); it != chain.rend() && task.frames.size() < kMaxTaskFrames; ++it)
                task.frames.push_back(it->frame);
            for (const auto& link : chain) r.heldLocks(link, &task.holds);
            task.awaits = r.awaits(r.ptr(address + layout.taskFutWaiter), chain);
            links[address] = std::move(chain);
        }
        if (task.loop) {
            AsyncioLoop& l = loops[task.loop];
            l.address = task.loop;
            if (!l.interp) l.interp = task.interp;
            if (task.state == "running" && task.runningOn == l.tstate) l.runningTask = address;
            l.tasks.push_back(scan.tasks.size());
        }
        index[address] = scan.tasks.size();
        scan.tasks.push_back(std::move(task));
    }
    // Who awaits each task: the task its callbacks wake, or the tasks awaiting the gather it is in.
    std::map<uint64_t, std::vector<uint64_t>> gatherWaiters;  // gather future -> tasks awaiting it
    for (const auto& task : scan.tasks)
        if (task.awaits && task.awaits->kind == "gather") gatherWaiters[task.awaits->future].push_back(task.address);
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
    for (auto& [address, loop] : loops) {
        if (auto ready = r.attribute(address, "_ready"); ready && *ready && r.typeName(*ready) == "collections.deque")
            if (auto n = target.readValue<int64_t>(*ready + 16); n && *n >= 0) loop.ready = static_cast<size_t>(*n);
        scan.loops.push_back(loop);
    }
    return scan;
}

}  // namespace pytstates
