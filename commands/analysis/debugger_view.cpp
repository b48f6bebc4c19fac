// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/debugger_view.h"

#include "commands/analysis/tasks.h"

#include <fstream>
#include <stdexcept>

#include "commands/analysis/native_report.h"
#include "symbols/cpython/frames.h"
#include "symbols/cpython/object_reader.h"
#include "symbols/cpython/object_repr.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

constexpr size_t kNativeFrames = 256;     // as --native unwinds
constexpr size_t kMaxLocals = 256;
constexpr size_t kLocalRepr = 1024;       // a local's repr in `locals`, as py-locals bounds it
constexpr size_t kPrintRepr = 1024;       // `print`'s and `object`'s repr, libpython.py's MAX_OUTPUT_LEN
constexpr size_t kMaxSourceLine = 4096;

ReportOptions viewOptions(bool useDwarf) {
    ReportOptions o;
    o.internals = true;
    o.findings = true;
    o.useDwarf = useDwarf;
    o.greenlets = false;  // a walk of every tracked object, for nothing the commands ask
    o.waits = true;
    o.asyncio = true;     // find-thread by an asyncio task
    return o;
}

// Where a listed thread state lies in the report.
struct Listed {
    const Runtime* runtime = nullptr;
    const Interpreter* interp = nullptr;
    const ThreadState* state = nullptr;
};

Listed findListed(const Report& report, uint64_t tstate) {
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters)
            for (const auto& ts : interp.tstates)
                if (ts.address == tstate) return {&rt, &interp, &ts};
    return {};
}

const ThreadRow* rowOf(const Report& report, int lwp) {
    for (const auto& row : report.threads)
        if (row.lwp == lwp) return &row;
    return nullptr;
}

// Python's repr() from memory (symbols/cpython/object_repr), at most bound bytes.
std::string reprOf(const ObjectReader& objects, uint64_t address, size_t bound) {
    if (!address) return "<NULL>";
    ReprLimits limits;
    limits.maxBytes = bound;
    return ReprReader(objects, limits).repr(address).text;
}

ViewLocal localOf(const ObjectReader& objects, const std::string& name, const std::string& kind, uint64_t value, size_t bound) {
    ViewLocal l;
    l.name = name;
    l.kind = kind;
    l.address = value;
    l.type = objects.typeName(value).value_or("");
    l.repr = reprOf(objects, value, bound);
    return l;
}

std::optional<uint64_t> parseAddress(const std::string& text) {
    if (text.empty()) return std::nullopt;
    try {
        size_t used = 0;
        unsigned long long v = std::stoull(text, &used, 0);
        if (used != text.size()) return std::nullopt;
        return v;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

DebuggerView::DebuggerView(const Target& target, bool useDwarf) : target_(target) {
    ReportOptions options = viewOptions(useDwarf);
    preparation_ = prepareReport(target, options);
    report_ = buildReport(target, options, preparation_);
}

DebuggerView::~DebuggerView() = default;

std::optional<ThreadStack> DebuggerView::stack(int lwp, std::string* why) const {
    const ThreadRow* row = rowOf(report_, lwp);
    if (!row) {
        *why = "LWP " + std::to_string(lwp) + " is not a thread of this process";
        return std::nullopt;
    }
    std::vector<uint64_t> runs = report_.tstatesOn(lwp);
    if (runs.empty()) {
        *why = "LWP " + std::to_string(lwp) + " runs no Python";
        return std::nullopt;
    }
    ThreadStack s;
    s.lwp = lwp;
    s.row = row;
    s.tstates = runs;
    s.tstate = runs.front();
    Listed top = findListed(report_, s.tstate);
    s.runtime = top.runtime;
    s.interp = top.interp;
    if (row->name && row->nameSource == "threading") s.name = row->name;
    // Every eval-loop call runs the frames from the innermost one out to its entry frame
    // (commands/analysis/native_report's merge).
    size_t group = 0;
    for (uint64_t ts : runs) {
        Listed at = findListed(report_, ts);
        if (!at.state) continue;
        for (const auto& f : at.state->frames) {
            ViewFrame v;
            v.frame = f;
            v.index = s.frames.size();
            v.evalGroup = group;
            v.tstate = ts;
            s.frames.push_back(std::move(v));
            if (f.entry) ++group;
        }
    }
    s.evalGroups = s.frames.empty() ? 0 : s.frames.back().evalGroup + 1;
    if (report_.crash && report_.crash->signal.lwp == lwp && report_.crash->entering) {
        s.gil = GilStand::Crashed;
        s.blocked = report_.crash->entering;
    } else if (s.interp && s.interp->gilDisabled) {
        s.gil = GilStand::NoGil;
    } else if (s.interp && s.interp->gilKnown && s.interp->gilHolder == s.tstate) {
        s.gil = GilStand::Holds;
    } else if (row->blockedOn && row->blockedOn->kind == WaitKind::Gil) {
        s.gil = GilStand::WaitsForGil;
        s.blocked = row->blockedOn;
    } else if (row->blockedOn && row->blockedOn->kind != WaitKind::None) {
        s.gil = GilStand::WaitsOther;
        s.blocked = row->blockedOn;
    } else if (s.interp && s.interp->gilKnown) {
        s.gil = GilStand::Running;  // neither holds nor waits for it
    }
    return s;
}

const NativeStack& DebuggerView::nativeStack(int lwp) {
    auto known = native_.find(lwp);
    if (known != native_.end()) return known->second;
    NativeStack stack;
    stack.lwp = lwp;
    const OsThread* thread = nullptr;
    for (const auto& t : target_.threads())
        if (t.lwp == lwp) thread = &t;
    if (!thread || !preparation_.native) {
        stack.end = "LWP " + std::to_string(lwp) + " cannot be unwound";
    } else {
        stack = preparation_.native->unwind(*thread, kNativeFrames, 0);
        std::string why;
        if (auto s = this->stack(lwp, &why)) {
            std::vector<PyFrame> python;
            for (const auto& f : s->frames) python.push_back(f.frame);
            if (size_t left = mergePython(stack.frames, python))
                stack.end += (stack.end.empty() ? "" : "; ") + std::to_string(left) +
                             " Python frame(s) could not be placed: no frame of this stack is named _PyEval_EvalFrameDefault";
        }
    }
    return native_.emplace(lwp, std::move(stack)).first->second;
}

std::vector<ViewLocal> DebuggerView::locals(const ViewFrame& frame) const {
    std::vector<ViewLocal> out;
    Listed at = findListed(report_, frame.tstate);
    if (!at.runtime) return out;
    FrameReader frames(target_, at.runtime->layout);
    ObjectReader objects(target_, at.runtime->layout);
    for (const auto& l : frames.locals(frame.frame.address, kMaxLocals)) {
        if (!l.value) continue;  // unset: locals() leaves it out too
        out.push_back(localOf(objects, l.name, l.kind, l.value, kLocalRepr));
    }
    return out;
}

ViewName DebuggerView::lookup(const ViewFrame& frame, const std::string& name) const {
    ViewName found;
    Listed at = findListed(report_, frame.tstate);
    if (!at.runtime) return found;
    FrameReader frames(target_, at.runtime->layout);
    ObjectReader objects(target_, at.runtime->layout);
    for (const auto& l : frames.locals(frame.frame.address, kMaxLocals)) {
        if (l.name != name || !l.value) continue;
        found.scope = "local";
        found.value = localOf(objects, l.name, l.kind, l.value, kPrintRepr);
        return found;
    }
    if (uint64_t globals = frames.globals(frame.frame.address))
        if (auto v = objects.dictValue(globals, name)) {
            found.scope = "global";
            found.value = localOf(objects, name, "global", *v, kPrintRepr);
            return found;
        }
    if (at.interp && at.interp->builtins)
        if (auto v = objects.dictValue(at.interp->builtins, name)) {
            found.scope = "builtin";
            found.value = localOf(objects, name, "builtin", *v, kPrintRepr);
        }
    return found;
}

TstateFacts DebuggerView::tstate(uint64_t address) const {
    TstateFacts f;
    f.address = address;
    Listed at = findListed(report_, address);
    f.listed = at.state != nullptr;
    f.runtime = at.runtime;
    f.interp = at.interp;
    f.state = at.state;
    auto place = report_.places.find(address);
    if (place != report_.places.end()) f.place = place->second;
    f.holdsGil = at.interp && at.interp->gilKnown && at.interp->gilHolder == address;
    for (const auto& row : report_.threads) {
        if (row.currentTstate == address) f.caches.push_back(source::Current{row.lwp, address, row.currentSource});
        if (row.autotssTstate == address)
            f.caches.push_back(source::AutoTss{row.lwp, address, row.autotssKey.value_or(0), row.autotssThreadLocal});
    }
    for (const auto& view : report_.internals)
        for (const auto& v : view.values)
            if (v.tstate == address) f.caches.push_back(source::Pybind11Key{v.lwp, address, view.record.tlsKey.value_or(0), view.record.id.raw, false});
    for (const auto& finding : report_.findings)
        if (finding.tstate == address) {
            f.findings.push_back(&finding);
            if (!f.memory && finding.memory) f.memory = finding.memory;
        }
    if (!f.listed && !f.memory && !report_.runtimes.empty()) f.memory = lookAtTstateMemory(target_, report_.runtimes, 0, address);
    if (at.state)
        for (const auto& frame : at.state->frames) {
            ViewFrame v;
            v.frame = frame;
            v.index = f.frames.size();
            v.tstate = address;
            f.frames.push_back(std::move(v));
        }
    return f;
}

namespace {

// A task found by address or name: the thread that runs its loop (tasks.cpp's loopLwp, else the
// task's own running thread).
FoundThread foundTask(const Report& report, const AsyncioScan& scan, const AsyncioTask& task, const std::string& shown) {
    FoundThread found;
    found.matched = "asyncio task";
    found.address = task.address;
    found.name = task.name;
    for (const auto& loop : scan.loops)
        if (loop.address == task.loop) found.lwp = loopLwp(report, loop);
    if (!found.lwp && task.lwp) found.lwp = task.lwp;
    if (!found.lwp) found.why = "the loop of task " + shown + " runs on no thread now";
    return found;
}

}  // namespace

FoundThread DebuggerView::findThread(const std::string& wanted) const {
    FoundThread found;
    if (auto address = parseAddress(wanted)) {
        if (report_.listed(*address)) {
            found.matched = "thread state";
            found.address = *address;
            found.lwp = report_.lwpFor(*address);
            if (!found.lwp) found.why = "thread state " + wanted + " runs on no thread (parked)";
            return found;
        }
        for (const auto& scan : report_.asyncio)
            for (const auto& task : scan.tasks)
                if (task.address == *address) return foundTask(report_, scan, task, wanted);
    }
    for (const auto& row : report_.threads)
        if (row.name && row.nameSource == "threading" && *row.name == wanted) {
            found.matched = "thread name";
            found.name = wanted;
            found.lwp = row.lwp;
            return found;
        }
    for (const auto& scan : report_.asyncio)
        for (const auto& task : scan.tasks)
            if (task.name == wanted) return foundTask(report_, scan, task, "'" + wanted + "'");
    found.why = "no thread state, Python thread name or asyncio task is '" + wanted + "'";
    return found;
}

ObjectFacts DebuggerView::object(uint64_t address) const {
    ObjectFacts o;
    if (report_.runtimes.empty()) return o;
    ObjectReader objects(target_, report_.runtimes.front().layout);
    ReprLimits limits;
    limits.maxBytes = kPrintRepr;
    ObjectRepr r = ReprReader(objects, limits).repr(address);
    if (!r.readable) return o;
    o.readable = true;
    o.type = r.type;
    o.repr = r.text;
    return o;
}

const Interpreter* DebuggerView::interpreterAt(uint64_t address) const {
    for (const auto& rt : report_.runtimes)
        for (const auto& interp : rt.interpreters)
            if (interp.address == address) return &interp;
    return nullptr;
}

const Runtime* DebuggerView::runtimeOfInterpreter(uint64_t address) const {
    for (const auto& rt : report_.runtimes)
        for (const auto& interp : rt.interpreters)
            if (interp.address == address) return &rt;
    return nullptr;
}

std::vector<std::string> sourceLines(const std::string& sysroot, const std::string& file, int first, int last) {
    std::vector<std::string> out;
    if (file.empty() || file[0] != '/' || first < 1 || last < first) return out;
    std::ifstream in;
    if (!sysroot.empty()) in.open(sysroot + file);
    if (!in.is_open()) in.open(file);
    if (!in.is_open()) return out;
    std::string line;
    for (int n = 1; n <= last && std::getline(in, line); ++n) {
        if (line.size() > kMaxSourceLine) line.resize(kMaxSourceLine);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (n >= first) out.push_back(line);
    }
    return out;
}

}  // namespace pytstates
