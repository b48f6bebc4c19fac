// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/python_waits.h"

#include <map>
#include <memory>
#include <set>

#include "symbols/cpython/frames.h"
#include "symbols/cpython/object_reader.h"
#include "symbols/cpython/with_blocks.h"
#include "symbols/text/base_name.h"

namespace pytstates {

namespace {

// The standard library's own waiting code: the frames between the lock and the code that waits.
bool isLibraryFrame(const PyFrame& f) {
    std::string name = baseName(f.file);
    return name == "threading.py" || name == "queue.py" || f.file.find("/asyncio/") != std::string::npos;
}

// What an object of these types is waited on as; "" for none.
std::string kindOfType(const std::vector<std::string>& types, const std::string& function) {
    for (const auto& t : types) {
        if (t == "Condition") return "condition";
        if (t == "Event") return "event";
        if (t == "Semaphore" || t == "BoundedSemaphore") return "semaphore";
        if (t == "Queue" || t == "LifoQueue" || t == "PriorityQueue") return "queue";
        if (t == "Thread" || t == "_MainThread" || t == "_DummyThread")
            return function == "join" || function == "_wait_for_tstate_lock" ? "join" : "";
        if (t == "Barrier") return "condition";
    }
    return "";
}

struct ThreadStack {
    const Runtime* runtime = nullptr;
    const std::vector<PyFrame>* frames = nullptr;
};

}  // namespace

struct PythonWaits::Impl {
public:
    Impl(const Target& target, const ReportOptions& options, Report& report) : target_(target), options_(options), r_(report) {
        for (const auto& rt : report.runtimes)
            for (const auto& interp : rt.interpreters)
                for (const auto& ts : interp.tstates) {
                    auto lwp = report.lwpFor(ts.address);
                    if (lwp && !ts.frames.empty()) stacks_.emplace(*lwp, ThreadStack{&rt, &ts.frames});
                }
        readHeld();
    }

    bool anyHeld() const { return !heldBy_.empty(); }

    void run() {
        bool unknownHolder = false;
        for (auto& row : r_.threads) {
            if (!row.blockedOn) continue;
            BlockedOn& b = *row.blockedOn;
            if (b.kind == WaitKind::Mutex || b.kind == WaitKind::Rwlock) b.holderEvidence = b.heldBy ? "owner-field" : "none";
            if (b.kind == WaitKind::Syscall) idleLoop(row.lwp, b);
            if (b.kind != WaitKind::PythonLock) continue;
            b.holderEvidence = b.heldBy ? "owner-field" : "none";
            if (!b.heldBy) unknownHolder = true;
            describe(row.lwp, b);
        }
        if (unknownHolder) holders();
    }

private:
    WithBlockReader* reader(const Runtime* rt) {
        auto it = readers_.find(rt);
        if (it != readers_.end()) return it->second.get();
        layouts_.push_back(std::make_unique<WithBlockLayout>(withBlockLayout(target_, *rt, options_.useDwarf)));
        layoutOf_[rt] = layouts_.back().get();
        auto reader = std::make_unique<WithBlockReader>(target_, rt->layout, *layouts_.back());
        return readers_.emplace(rt, std::move(reader)).first->second.get();
    }

    // The kind and the Python object from the library frames the lock's wait runs under (the
    // outermost that says more than a Condition: an Event's wait runs a Condition's), and how
    // the first frame outside them names it.
    void describe(int lwp, BlockedOn& b) {
        auto it = stacks_.find(lwp);
        if (it == stacks_.end()) return;
        const auto& frames = *it->second.frames;
        WithBlockReader* rd = reader(it->second.runtime);
        size_t user = 0;
        for (; user < frames.size() && isLibraryFrame(frames[user]); ++user) {
            uint64_t self = rd->firstArgument(frames[user].address);
            std::string kind = kindOfType(rd->typeNames(self), frames[user].function);
            if (kind.empty() || (kind == "condition" && !b.pythonKind.empty())) continue;
            b.pythonKind = kind;
            b.pythonObject = self;
        }
        if (b.pythonKind == "join") joined(it->second.runtime, b);
        // No address from the native frames (no DWARF): a `with <lock>:` being entered shows it.
        if (!b.object && b.pythonKind.empty() && !frames.empty() && !isLibraryFrame(frames.front()))
            if ((b.object = rd->entering(frames.front().address))) b.objectFromFrame = true;
        if (user >= frames.size()) return;
        uint64_t named = b.pythonObject ? b.pythonObject : b.object;
        b.pythonName = nameIn(it->second.runtime, frames[user].address, named);
    }

    // An asyncio event loop idle in its selector: the system call under selectors.py's select(),
    // called by BaseEventLoop._run_once (its self is the loop), waits for I/O or the next timer.
    void idleLoop(int lwp, BlockedOn& b) {
        auto it = stacks_.find(lwp);
        if (it == stacks_.end() || it->second.frames->size() < 2) return;
        const auto& frames = *it->second.frames;
        if (frames[0].function != "select" || baseName(frames[0].file) != "selectors.py") return;
        if (frames[1].function != "_run_once" || baseName(frames[1].file) != "base_events.py" ||
            frames[1].file.find("/asyncio/") == std::string::npos)
            return;
        b.pythonKind = "asyncio-loop";
        b.pythonObject = reader(it->second.runtime)->firstArgument(frames[1].address);
    }

    // How a frame names an object: a local or argument, an attribute of one (self._lock), a global.
    std::string nameIn(const Runtime* rt, uint64_t frame, uint64_t object) {
        if (!object) return "";
        Readers& r = readers(rt);
        auto locals = r.frames.locals(frame);
        for (const auto& l : locals)
            if (l.value == object) return l.name;
        for (const auto& l : locals) {
            if (!l.value) continue;
            auto attributes = r.objects.attributes(l.value, 64);
            if (!attributes) continue;
            for (const auto& a : *attributes)
                if (a.value == object)
                    if (auto name = r.objects.str(a.key, 64)) return l.name + "." + *name;
        }
        // A module's globals, read once: a thousand threads of one module name their objects from one dict.
        uint64_t globals = r.frames.globals(frame);
        if (!globals) return "";
        auto known = r.globalNames.find(globals);
        if (known == r.globalNames.end()) {
            std::map<uint64_t, std::string> names;
            if (auto entries = r.objects.dictItems(globals, 4096))
                for (const auto& e : *entries)
                    if (auto name = r.objects.str(e.key, 64)) names.emplace(e.value, *name);
            known = r.globalNames.emplace(globals, std::move(names)).first;
        }
        auto name = known->second.find(object);
        return name == known->second.end() ? "" : name->second;
    }

    // A join waits for the joined thread: threading.Thread's _native_id (3.8+), else its _ident
    // (the pthread_t) names its LWP.
    void joined(const Runtime* rt, BlockedOn& b) {
        ObjectReader& objects = readers(rt).objects;
        if (auto id = objects.attribute(b.pythonObject, "_native_id"))
            if (auto lwp = objects.integer(*id))
                for (const auto& t : target_.threads())
                    if (t.lwp == *lwp) {
                        b.heldBy = t.lwp;
                        b.holderEvidence = "owner-field";
                        b.note.clear();
                        return;
                    }
        if (auto ident = objects.attribute(b.pythonObject, "_ident"))
            if (auto pthread = objects.integer(*ident))
                for (const auto& t : target_.threads())
                    if (t.pthread == static_cast<uint64_t>(*pthread)) {
                        b.heldBy = t.lwp;
                        b.holderEvidence = "owner-field";
                        b.note.clear();
                        return;
                    }
        b.note = "the joined Thread's _native_id names no thread of this process (it ended, or it never started)";
    }

    // Who holds each lock no owner field names: the one other thread with a frame in the body of
    // `with <lock>:` (or `with <the Condition>:` for a Condition's lock). A frame under a
    // Condition's wait() has released that Condition: its with-block no longer holds it.
    // What every thread's frames hold by with-blocks, by object.
    void readHeld() {
        for (const auto& [lwp, stack] : stacks_) {
            WithBlockReader* rd = reader(stack.runtime);
            std::set<uint64_t> released;
            for (const auto& f : *stack.frames) {
                if (isLibraryFrame(f) && f.function == "wait") {
                    uint64_t self = rd->firstArgument(f.address);
                    if (kindOfType(rd->typeNames(self), f.function) == "condition") released.insert(self);
                }
                for (const auto& h : rd->held(f.address))
                    if (!released.count(h.object)) heldBy_[h.object].push_back({lwp, &f, h, layoutOf_[stack.runtime]});
            }
        }
    }

    void holders() {
        for (auto& row : r_.threads) {
            if (!row.blockedOn || row.blockedOn->kind != WaitKind::PythonLock || row.blockedOn->heldBy) continue;
            BlockedOn& b = *row.blockedOn;
            std::map<int, const Holder*> found;
            for (uint64_t object : {b.object, b.pythonObject}) {
                auto it = object ? heldBy_.find(object) : heldBy_.end();
                if (it == heldBy_.end()) continue;
                // The waiter is never its own holder: on 3.11 its own pending `with` keeps the
                // __exit__ already, and a with-block it holds is not what it waits for.
                for (const auto& h : it->second)
                    if (h.lwp != row.lwp && !found.count(h.lwp)) found.emplace(h.lwp, &h);
            }
            if (found.size() == 1) {
                const Holder& h = *found.begin()->second;
                b.heldBy = h.lwp;
                b.holderAt = *h.frame;
                b.holderWithLine = h.with.withLine;
                b.holderObject = h.with.object;
                b.holderEvidence = "with-block";
                b.layoutSource = h.layout->source;
                if (auto holder = stacks_.find(h.lwp); holder != stacks_.end())
                    b.holderName = nameIn(holder->second.runtime, h.frame->address, h.with.object);
                b.note.clear();
            } else if (found.size() > 1) {
                b.note = "with-blocks of several threads show it (";
                for (auto f = found.begin(); f != found.end(); ++f) b.note += (f == found.begin() ? "LWP " : ", LWP ") + std::to_string(f->first);
                b.note += "): no holder is claimed";
            } else if (b.pythonKind == "condition" || b.pythonKind == "event" || b.pythonKind == "queue" || b.pythonKind == "semaphore") {
                // Condition.wait blocks on a lock of its own, which the notify() it waits for releases.
                b.note = "waits to be notified: the lock is the Condition's waiter lock, released by notify() (nobody holds it as an owner)";
            } else if (b.object) {
                b.note = "a Lock: held, its owner is not recorded and no other thread's frame holds it in a with-block";
            }
        }
    }

    const Target& target_;
    const ReportOptions& options_;
    Report& r_;
    std::map<int, ThreadStack> stacks_;
    std::vector<std::unique_ptr<WithBlockLayout>> layouts_;
    std::map<const Runtime*, std::unique_ptr<WithBlockReader>> readers_;
    std::map<const Runtime*, const WithBlockLayout*> layoutOf_;
    // The frame and object readers of one runtime, kept for their caches (code objects, types).
    struct Readers {
        FrameReader frames;
        ObjectReader objects;
        std::map<uint64_t, std::map<uint64_t, std::string>> globalNames;  // globals dict -> value -> name
    };
    std::map<const Runtime*, std::unique_ptr<Readers>> objectReaders_;
    Readers& readers(const Runtime* rt) {
        auto& r = objectReaders_[rt];
        if (!r) r.reset(new Readers{FrameReader(target_, rt->layout), ObjectReader(target_, rt->layout), {}});
        return *r;
    }
    struct Holder {
        int lwp;
        const PyFrame* frame;
        HeldWith with;
        const WithBlockLayout* layout;
    };
    std::map<uint64_t, std::vector<Holder>> heldBy_;  // object -> the frames holding it by a with-block
};

PythonWaits::PythonWaits(const Target& target, const ReportOptions& options, Report& report)
    : impl_(std::make_unique<Impl>(target, options, report)) {}
PythonWaits::~PythonWaits() = default;
bool PythonWaits::anyHeld() const { return impl_->anyHeld(); }
void PythonWaits::run() { impl_->run(); }

}  // namespace pytstates
