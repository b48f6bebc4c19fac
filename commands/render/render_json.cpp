// SPDX-License-Identifier: Apache-2.0
// The report as JSON, written as it goes (commands/render/json_writer.h): every object's keys are given
// here in ascending byte order, the order the output has always had (nlohmann's sorted objects).
#include <map>

#include "commands/render/finding_words.h"
#include "commands/render/json_writer.h"
#include "commands/render/render_greenlets.h"
#include "commands/render/render_stacks.h"
#include "commands/render/render_tasks.h"
#include "commands/render/render.h"
#include "symbols/core/signal_names.h"

namespace pytstates {

namespace {

void addressOrNull(JsonWriter& w, std::string_view k, uint64_t v) { w.fieldOrNull(k, v != 0, hexAddress(v)); }
void stringOrNull(JsonWriter& w, std::string_view k, const std::string& v) { w.fieldOrNull(k, !v.empty(), v); }

// findings[].history (docs/report.schema.json): the thread state's last life as recorded.
void historyJson(JsonWriter& w, const Finding& f) {
    w.beginArray();
    for (const auto& h : f.history) {
        const HistoryEvent& e = h.event;
        w.beginObject();
        w.field("event", lifecycleEventName(e.event));
        w.key("frames");
        w.beginArray();
        for (const auto& fr : e.frames) {
            w.beginObject();
            w.field("function", fr.function);
            w.field("module", fr.module);
            w.field("pc", hexAddress(fr.pc));
            w.endObject();
        }
        w.endArray();
        w.field("function", e.function);
        w.field("key", e.key);
        w.field("lwp", e.lwp);
        w.field("ms", e.ms);
        w.field("seq", e.seq);
        stringOrNull(w, "source", h.source);
        w.field("tstate", hexAddress(e.tstate));
        w.endObject();
    }
    w.endArray();
}

// The modules that use a record: all of them, those whose own static holds it, and that evidence.
// Paths are values, never keys: they need not be UTF-8. Its keys sort as "confirmed_by", then
// (after the caller's "dict" ... ) "modules", "modules_confirmed": written in two parts.
void confirmedBy(JsonWriter& w, const std::vector<ModuleUse>& uses) {
    w.key("confirmed_by");
    w.beginArray();
    for (const auto& m : uses) {
        if (!m.confirmed) continue;
        w.beginObject();
        w.field("evidence", m.how);
        w.field("module", m.path);
        w.endObject();
    }
    w.endArray();
}

void modules(JsonWriter& w, const std::vector<ModuleUse>& uses) {
    std::vector<std::string> all, confirmed;
    for (const auto& m : uses) {
        all.push_back(m.path);
        if (m.confirmed) confirmed.push_back(m.path);
    }
    w.field("modules", all);
    w.field("modules_confirmed", confirmed);
}

void nativeFrameJson(JsonWriter& w, const NativeFrame& f) {
    w.beginObject();
    stringOrNull(w, "file", f.file);
    stringOrNull(w, "function", f.function);
    if (f.inlined) w.field("inlined", true);
    w.fieldOrNull("line", !f.file.empty(), f.line);
    stringOrNull(w, "module", f.module);
    w.fieldOrNull("offset", !f.module.empty(), hexAddress(f.offset));
    std::map<std::string, std::string> params;  // by name; a name given twice keeps its last value
    for (const auto& v : f.values)
        if (v.kind == FrameValue::Kind::Parameter) params[v.name] = hexAddress(v.value);
    if (!params.empty()) w.field("parameters", params);
    w.field("pc", hexAddress(f.pc));
    w.key("python");  // the Python frames this eval-loop frame runs, all of them
    w.beginArray();
    for (const auto& py : f.python) renderFrameJson(w, py);
    w.endArray();
    if (f.tailCall) w.field("tail_call", true);
    w.endObject();
}

void nativeFramesJson(JsonWriter& w, const std::vector<NativeFrame>& frames) {
    w.beginArray();
    for (const auto& f : frames) nativeFrameJson(w, f);
    w.endArray();
}

// Where a thread waits: the native caller and the Python frame, as "at".
void addWhere(JsonWriter& w, const NativeFrame& at, const std::optional<PyFrame>& py) {
    w.key("at");
    w.beginObject();
    if (!at.function.empty() || !at.file.empty()) {
        w.key("native");
        w.beginObject();
        stringOrNull(w, "file", at.file);
        stringOrNull(w, "function", at.function);
        w.fieldOrNull("line", !at.file.empty(), at.line);
        w.endObject();
    }
    if (py) {
        w.key("python");
        renderFrameJson(w, *py);
    }
    w.endObject();
}

void blockedOnJson(JsonWriter& w, const BlockedOn& b) {
    w.beginObject();
    if (b.kind != WaitKind::None) addWhere(w, b.at, b.pythonAt);
    if (!b.call.empty()) w.field("call", b.call);
    w.field("frame", b.frame);
    stringOrNull(w, "function", b.function);
    w.field("held_by", b.heldBy);
    // Python's own waits (commands/analysis/python_waits): the holder's frame, the evidence, the kind the
    // Python frames say (condition, event, queue, semaphore, join), the object's name and address.
    if (b.holderAt) {
        w.key("holder");
        renderFrameJson(w, *b.holderAt);
    }
    if (!b.holderEvidence.empty()) w.field("holder_evidence", b.holderEvidence);
    if (!b.holderName.empty()) w.field("holder_python_name", b.holderName);
    if (b.holderWithLine > 0) w.field("holder_with_line", b.holderWithLine);
    w.field("kind", b.pythonKind.empty() ? waitKindName(b.kind) : b.pythonKind.c_str());
    if (!b.layoutSource.empty()) w.field("layout_source", b.layoutSource);
    if (!b.note.empty()) w.field("note", b.note);
    addressOrNull(w, "object", b.object);
    if (b.objectFromFrame) w.field("object_from", "python-frame");  // the `with` being entered, not the native frame
    if (b.ownerReadLate) w.field("owner_read_after_resume", true);
    if (b.kind == WaitKind::PythonLock) stringOrNull(w, "python_name", b.pythonName);
    if (b.pythonObject) addressOrNull(w, "python_object", b.pythonObject);
    if (b.duringFinalization) w.field("runtime_finalizing", true);  // a GIL wait that never ends
    w.endObject();
}

void typesJson(JsonWriter& w, const std::vector<RegisteredType>& types) {
    w.key("types");
    w.beginArray();
    for (const auto& t : types) {
        w.beginObject();
        w.field("cpp", t.cppName);
        w.field("python", t.pythonName);
        w.endObject();
    }
    w.endArray();
}

void findingJson(JsonWriter& w, const Finding& f) {
    w.beginObject();
    const FindingCodeInfo& info = findingInfo(f.code);
    w.field("code", info.name);
    if (!f.taskCycle.empty()) renderTaskCycleJson(w, f);  // asyncio tasks (--tasks)
    if (!f.cycle.empty()) {
        w.key("cycle");
        w.beginArray();
        for (const auto& step : f.cycle) {
            w.beginObject();
            addWhere(w, step.at, step.pythonAt);
            w.field("held_by", step.heldBy);
            if (step.holderAt) {  // Python's own waits: where a with-block shows the holder holding it
                w.key("holder");
                renderFrameJson(w, *step.holderAt);
            }
            if (!step.holderEvidence.empty()) w.field("holder_evidence", step.holderEvidence);
            w.field("lwp", step.lwp);
            addressOrNull(w, "object", step.object);
            if (step.waitsFor == WaitKind::PythonLock) stringOrNull(w, "python_name", step.pythonName);
            w.field("waits_for", waitKindName(step.waitsFor));
            w.endObject();
        }
        w.endArray();
    }
    bool gilHeld = info.subject == FindingSubject::Waiters;
    bool task = info.subject == FindingSubject::Task;  // event-loop-blocked
    if (task && f.blocked) {  // what blocks the loop's thread, as threads[].blocked_on says it
        w.key("blocked_on");
        blockedOnJson(w, *f.blocked);
    }
    if (gilHeld || task) w.field("function", f.function);
    if (!f.history.empty()) {
        w.key("history");
        historyJson(w, f);
    }
    if (task) w.field("loop", hexAddress(f.loop));
    w.field("lwp", f.lwp);
    w.field("message", findingMessage(f));
    if (task) w.field("ready", f.readyCallbacks);
    w.field("severity", severityName(info.severity));
    w.field("sources", findingSourceLines(f));
    if (task) w.fieldOrNull("task", f.task != 0, hexAddress(f.task));
    if (task) {
        w.key("timers");
        loopTimersJson(w, f.timers);
    }
    addressOrNull(w, "tstate", f.tstate);
    if (gilHeld) w.field("waiters", f.waiters);
    w.endObject();
}

void crashJson(JsonWriter& w, const Report& report, const CrashReport& c) {
    w.beginObject();
    if (c.abort) {
        w.key("abort");
        w.beginObject();
        w.field("kind", c.abort->kind);
        stringOrNull(w, "message", c.abort->message);
        if (!c.abort->note.empty()) w.field("note", c.abort->note);
        if (!c.abort->pythonType.empty()) w.field("python_type", c.abort->pythonType);
        stringOrNull(w, "type", c.abort->type);
        w.endObject();
    }
    w.fieldOrNull("code", c.signal.haveSiginfo, c.signal.code);
    if (c.entering) {
        w.key("entering");  // the wait it was entering when it faulted: it waits for nothing
        blockedOnJson(w, *c.entering);
    }
    std::string codeName = c.signal.haveSiginfo ? signalCodeName(c.signal.signal, c.signal.code) : "";
    if (!codeName.empty()) w.field("code_name", codeName);
    w.field("explained_by", c.explainedBy);
    std::string explanation = crashExplanationWords(report);
    if (!explanation.empty()) w.field("explanation", explanation);
    if (!c.fatalError.empty()) w.field("fatal_error", c.fatalError);
    addressOrNull(w, "fault_address", c.signal.faultAddress);
    w.key("frames");
    nativeFramesJson(w, c.stack.frames);
    if (!c.stack.end.empty()) w.field("frames_end", c.stack.end);
    w.field("lwp", c.signal.lwp);
    if (c.signal.haveSiginfo && c.signal.code <= 0 && c.signal.senderPid) w.field("sender_pid", c.signal.senderPid);
    w.field("signal", c.signal.signal);
    w.field("signal_name", signalName(c.signal.signal));
    w.endObject();
}

void targetJson(JsonWriter& w, const Report& report) {
    const auto& target = report.target;
    w.beginObject();
    w.field("arch", target.arch);
    w.key("crash");
    if (report.crash) crashJson(w, report, *report.crash);
    else w.null();
    w.field("executable", target.executable);
    w.key("files");
    w.beginArray();
    for (const auto& f : target.files) {
        w.beginObject();
        stringOrNull(w, "build_id", f.buildId);
        stringOrNull(w, "debug_file", f.debugFile);
        w.field("deleted", f.deleted);
        stringOrNull(w, "file", f.file);
        w.field("module", f.module);
        if (!f.problem.empty()) w.field("problem", f.problem);
        stringOrNull(w, "via", f.via);
        w.endObject();
    }
    w.endArray();
    w.field("kind", target.kind == TargetKind::Live ? "live" : "core");
    if (!target.namespacePids.empty()) w.field("namespace_pids", target.namespacePids);
    w.field("pid", target.pid);
    if (target.process) {  // a core's NT_PRPSINFO
        w.key("process");
        w.beginObject();
        w.field("arguments", target.process->arguments);
        w.field("command", target.process->command);
        w.field("gid", static_cast<uint64_t>(target.process->gid));
        w.field("ppid", target.process->ppid);
        w.field("uid", static_cast<uint64_t>(target.process->uid));
        w.endObject();
    }
    if (target.readAfterResume) {
        w.key("read_after_resume");
        w.beginArray();
        for (const auto& p : *target.readAfterResume) {
            w.beginObject();
            w.field("bytes", p.bytes);
            w.field("part", p.part);
            w.field("reads", p.reads);
            w.endObject();
        }
        w.endArray();
    }
    if (target.root != "/") w.field("root", target.root);
    if (target.stoppedMs) w.field("stopped_ms", *target.stoppedMs);
    if (!target.sysroot.empty()) w.field("sysroot", target.sysroot);
    w.endObject();
}

void tstateJson(JsonWriter& w, const Report& report, const Runtime& rt, const Interpreter& interp, const ThreadState& ts,
                bool withFrames, size_t shownFrames) {
    auto lwp = report.lwpFor(ts.address);
    auto place = report.places.find(ts.address);
    const TstatePlace* p = place != report.places.end() ? &place->second : nullptr;
    w.beginObject();
    w.field("address", hexAddress(ts.address));
    if (withFrames) renderFramesJson(w, ts.frames, shownFrames);
    if (const GreenletScan* scan = report.greenletScanOf(rt)) {
        w.key("greenlets");
        renderTstateGreenletsJson(w, *scan, lwp, interp.address, shownFrames);
    }
    w.field("holds_gil", interp.gilKnown && interp.gilHolder == ts.address);
    w.field("id", ts.id);
    w.field("lwp", lwp);
    if (p && p->lwp) w.field("lwp_evidence", p->evidence);
    else if (p && p->runnerUnknown) w.field("lwp_evidence", "unknown");  // runs, on a thread not found
    if (p && p->madeBeforeFork) w.field("made_before_fork", true);
    // made_by_lwp only where the maker is not the runner; null: no such thread.
    if (p && (p->madeBy != p->lwp || (!p->madeBy && !p->lwp))) w.field("made_by_lwp", p->madeBy);
    w.field("native_thread_id", ts.nativeThreadId);
    if (!ts.note.empty()) w.field("note", ts.note);
    if (p) w.field("parked", !p->lwp && !p->runnerUnknown);
    if (ts.state) w.field("state", threadStateWords(*ts.state));
    w.field("thread_id", hexAddress(ts.threadId));
    w.endObject();
}

// The interpreter's own state (commands/analysis/python_state): its fields in this object's key order.
void interpreterStateJson(JsonWriter& w, const Report& report, const Interpreter& interp) {
    auto it = report.interpreterStates.find(interp.address);
    if (it == report.interpreterStates.end()) return;
    const InterpreterStateView& v = it->second;
    w.fieldOrNull("state", v.finalizing.has_value(), std::string(v.finalizing.value_or(false) ? "finalizing" : "running"));
    w.field("state_layout", v.layoutSource);
}

void interpreterGcJson(JsonWriter& w, const Report& report, const Interpreter& interp) {
    auto it = report.interpreterStates.find(interp.address);
    if (it == report.interpreterStates.end()) return;
    const InterpreterStateView& v = it->second;
    w.field("finalizing_lwp", v.finalizingLwp);
    if (v.finalizingLwp) w.field("finalizing_lwp_evidence", v.finalizingEvidence);
    addressOrNull(w, "finalizing_tstate", v.finalizingTstate);
    w.field("gc_collecting", v.gcCollecting);
    w.field("gc_lwp", v.gcLwp);
}

void runtimeJson(JsonWriter& w, const Report& report, const Runtime& rt, bool withFrames, size_t shownFrames) {
    w.beginObject();
    w.field("address", hexAddress(rt.address));
    w.field("free_threaded", rt.layout.freeThreaded);
    if (const GreenletScan* scan = report.greenletScanOf(rt)) {
        w.key("greenlet");
        renderGreenletScanJson(w, report, *scan, shownFrames);
    }
    w.key("interpreters");
    w.beginArray();
    for (const auto& interp : rt.interpreters) {
        w.beginObject();
        w.field("address", hexAddress(interp.address));
        interpreterGcJson(w, report, interp);
        w.field("gil", interp.gilDisabled ? "disabled" : !interp.gilKnown ? "unknown" : interp.gilHolder ? "held" : "free");
        w.fieldOrNull("gil_holder", interp.gilKnown && interp.gilHolder, hexAddress(interp.gilHolder));
        // Where the holder was read, and the state that took the GIL where the holder swapped in another.
        if (interp.gilHolder) w.field("gil_holder_source", gilSourceName(interp.gilHolderSource));
        if (interp.gilTakenBy) w.field("gil_taken_by", hexAddress(interp.gilTakenBy));
        w.field("id", interp.id);
        w.field("main", interp.main);
        if (!interp.note.empty()) w.field("note", interp.note);
        interpreterStateJson(w, report, interp);
        w.key("tstates");
        w.beginArray();
        for (const auto& ts : interp.tstates) tstateJson(w, report, rt, interp, ts, withFrames, shownFrames);
        w.endArray();
        w.endObject();
    }
    w.endArray();
    w.field("layout", rt.layout.source);
    w.field("layout_cached", rt.layout.dwarfCached);
    w.field("layout_sources", rt.layout.sources);
    w.field("module", rt.modulePath);
    if (!rt.notes.empty()) w.field("notes", rt.notes);
    w.field("version", rt.version);
    w.endObject();
}

void threadJson(JsonWriter& w, const std::map<int, std::vector<uint64_t>>& runsOn, const ThreadRow& t) {
    w.beginObject();
    if (t.autotssKey) w.field("autotss_key", *t.autotssKey);
    if (t.autotssThreadLocal) w.field("autotss_source", "_Py_tss_gilstate");
    addressOrNull(w, "autotss_tstate", t.autotssTstate);
    if (t.blockedOn) {
        w.key("blocked_on");
        blockedOnJson(w, *t.blockedOn);
    }
    if (!t.currentSource.empty()) w.field("current_source", t.currentSource);
    if (!t.currentStatus.empty()) w.field("current_status", t.currentStatus);
    addressOrNull(w, "current_tstate", t.currentTstate);
    if (t.debuggerThread) w.field("debugger_thread", t.debuggerThread);
    w.field("lwp", t.lwp);
    w.fieldOrNull("name", t.name.has_value(), t.name.value_or(""));
    if (t.name) w.field("name_source", t.nameSource);
    if (t.namespaceLwp) w.field("namespace_lwp", t.namespaceLwp);
    if (!t.nativeEnd.empty()) w.field("native_end", t.nativeEnd);
    w.key("native_frames");
    nativeFramesJson(w, t.nativeFrames);
    w.field("pthread", hexAddress(t.pthread));
    std::vector<std::string> runs;  // the thread states running on it, innermost first
    if (auto on = runsOn.find(t.lwp); on != runsOn.end())
        for (uint64_t ts : on->second) runs.push_back(hexAddress(ts));
    w.field("tstates", runs);
    w.endObject();
}

void internalsJson(JsonWriter& w, const InternalsView& view, bool types) {
    const auto& rec = view.record;
    w.beginObject();
    addressOrNull(w, "address", rec.address);
    confirmedBy(w, rec.modules);
    w.field("dict", rec.dictName);
    w.field("id", rec.id.raw);
    w.field("interpreter", hexAddress(rec.interpreter));
    addressOrNull(w, "istate", rec.istate);
    w.field("layout", rec.layout.source);
    modules(w, rec.modules);
    if (!rec.problem.empty()) w.field("problem", rec.problem);
    w.field("tls_key", rec.tlsKey);
    w.key("tls_values");
    w.beginArray();
    for (const auto& v : view.values) {
        w.beginObject();
        w.field("lwp", v.lwp);
        if (v.status != "set") w.field("status", v.status);
        w.field("tstate", hexAddress(v.tstate));
        w.endObject();
    }
    w.endArray();
    if (types) typesJson(w, rec.types);
    w.field("version", rec.id.version);
    w.endObject();
}

void nanobindJson(JsonWriter& w, const NanobindRecord& nb, bool types) {
    w.beginObject();
    w.field("abi_tag", nb.abiTag);
    addressOrNull(w, "address", nb.address);
    confirmedBy(w, nb.modules);
    w.field("dict", nb.dictName);
    w.field("domain", nb.domain);
    w.field("interpreter", hexAddress(nb.interpreter));
    w.field("key", nb.key);
    modules(w, nb.modules);
    if (!nb.problem.empty()) w.field("problem", nb.problem);
    if (types) {
        typesJson(w, nb.types);
        w.field("types_layout", nb.layout);
    }
    w.field("version", nb.version);
    w.endObject();
}

}  // namespace

std::string renderJson(const Report& report, const RenderOptions& options) {
    std::string text;
    JsonWriter w(text);
    bool internals = options.command != Command::Tstates;
    w.beginObject();
    renderTasksJsonNotes(w, report);  // --tasks: "asyncio_notes", "event_loops"
    renderTasksJson(w, report);
    w.key("findings");
    w.beginArray();
    for (const auto& f : report.findings) findingJson(w, f);
    w.endArray();
    if (internals) {
        w.key("internals");
        w.beginArray();
        for (const auto& view : report.internals) internalsJson(w, view, options.types);
        w.endArray();
        w.key("module_locals");
        w.beginArray();
        for (const auto& l : report.moduleLocals) {
            w.beginObject();
            w.field("address", hexAddress(l.keyAddress));
            w.field("dict", l.dictName);
            w.field("id", l.id);
            w.field("interpreter", hexAddress(l.interpreter));
            stringOrNull(w, "module", l.module);
            w.endObject();
        }
        w.endArray();
        w.key("nanobind");
        w.beginArray();
        for (const auto& nb : report.nanobind) nanobindJson(w, nb, options.types);
        w.endArray();
    }
    if (!report.noRuntime.empty()) w.field("no_runtime", report.noRuntime);
    w.key("runtimes");
    w.beginArray();
    for (const auto& rt : report.runtimes) runtimeJson(w, report, rt, options.command != Command::Internals, options.frames);
    w.endArray();
    w.field("schema", 1);
    w.key("target");
    targetJson(w, report);
    w.key("threads");
    w.beginArray();
    auto runsOn = report.tstatesByLwp();
    for (const auto& t : report.threads) threadJson(w, runsOn, t);
    w.endArray();
    if (!report.waitNotes.empty()) w.field("wait_notes", report.waitNotes);
    if (!report.warnings.empty()) w.field("warnings", report.warnings);
    w.endObject();
    text += '\n';
    return text;
}

}  // namespace pytstates
