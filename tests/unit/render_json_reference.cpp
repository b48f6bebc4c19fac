// SPDX-License-Identifier: Apache-2.0
// The JSON renderer as it was before commands/render/json_writer.h (a whole nlohmann tree, then its
// dump): the reference render_json_test holds the writer's bytes against.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "commands/render/finding_words.h"
#include "commands/render/render.h"
#include "commands/render/text_encoding.h"
#include "symbols/core/signal_names.h"
#include "tests/unit/render_json_reference.h"

namespace pytstates::reference {

namespace {

using nlohmann::json;

json addressOrNull(uint64_t v) { return v ? json(hexAddress(v)) : json(nullptr); }

// findings[].history (docs/report.schema.json): the thread state's last life as recorded.
json historyJson(const Finding& f) {
    json out = json::array();
    for (const auto& h : f.history) {
        const HistoryEvent& e = h.event;
        json frames = json::array();
        for (const auto& fr : e.frames)
            frames.push_back({{"function", fr.function}, {"module", fr.module}, {"pc", hexAddress(fr.pc)}});
        json event = {{"event", lifecycleEventName(e.event)}, {"seq", e.seq}, {"lwp", e.lwp}, {"tstate", hexAddress(e.tstate)},
                      {"key", e.key ? json(*e.key) : json(nullptr)}, {"source", h.source.empty() ? json(nullptr) : json(h.source)},
                      {"function", e.function}, {"ms", e.ms}, {"frames", frames}};
        out.push_back(event);
    }
    return out;
}

// Strings from the target need not be UTF-8. Such a string is given with U+FFFD in place of each
// ill-formed sequence, and a companion field "<name>_bytes" holds its exact bytes in hex (for an
// array of strings: an array with the hex of each string that needed it, null for the others).
bool needsBytes(const json& v) { return v.is_string() && !isValidUtf8(v.get_ref<const std::string&>()); }

void makeUtf8(json& value) {
    if (value.is_array()) {
        for (auto& element : value) makeUtf8(element);
        return;
    }
    if (!value.is_object()) return;
    json companions = json::object();
    for (auto& [key, v] : value.items()) {
        if (needsBytes(v)) {
            companions[key + "_bytes"] = hexBytes(v.get_ref<const std::string&>());
            v = replaceInvalidUtf8(v.get_ref<const std::string&>());
        } else if (v.is_array() && std::any_of(v.begin(), v.end(), needsBytes)) {
            json raw = json::array();
            for (auto& element : v) {
                raw.push_back(needsBytes(element) ? json(hexBytes(element.get_ref<const std::string&>())) : json(nullptr));
                if (needsBytes(element)) element = replaceInvalidUtf8(element.get_ref<const std::string&>());
                else makeUtf8(element);
            }
            companions[key + "_bytes"] = raw;
        } else {
            makeUtf8(v);
        }
    }
    for (auto& [key, v] : companions.items()) value[key] = v;
}

// The modules that use a record: all of them, those whose own static holds it, and that evidence.
void addModuleUses(json& record, const std::vector<ModuleUse>& uses) {
    json modules = json::array(), confirmed = json::array(), confirmedBy = json::array();
    for (const auto& m : uses) {
        modules.push_back(m.path);
        if (!m.confirmed) continue;
        confirmed.push_back(m.path);
        confirmedBy.push_back({{"module", m.path}, {"evidence", m.how}});  // paths are values, never keys: they need not be UTF-8
    }
    record["modules"] = modules;
    record["modules_confirmed"] = confirmed;
    record["confirmed_by"] = confirmedBy;
}

json frameJson(const PyFrame& f) { return {{"function", f.function}, {"file", f.file}, {"line", f.line}}; }

json greenletJson(const GreenletInfo& g) {
    json frames = json::array();
    for (const auto& f : g.frames) frames.push_back(frameJson(f));
    json out = {{"address", hexAddress(g.address)}, {"type", g.typeName},     {"state", g.state},
                {"main", g.main},                   {"parent", addressOrNull(g.parent)}, {"frames", frames}};
    if (!g.note.empty()) out["note"] = g.note;
    return out;
}

// The runtime's greenlet module: what was read, how, and the greenlets under no thread state.
json greenletScanJson(const Report& report, const GreenletScan& scan) {
    json threads = json::array();
    for (const auto& t : scan.threads)
        threads.push_back({{"lwp", t.lwp},
                           {"thread_state", hexAddress(t.threadState)},
                           {"main_greenlet", hexAddress(t.mainGreenlet)},
                           {"current_greenlet", addressOrNull(t.currentGreenlet)}});
    json unowned = json::array();
    for (const auto* g : report.greenletsWithoutTstate(scan)) {
        json one = greenletJson(*g);
        one["lwp"] = g->lwp ? json(g->lwp) : json(nullptr);
        unowned.push_back(one);
    }
    json out = {{"module", scan.module},
                {"version", scan.version.empty() ? json(nullptr) : json(scan.version)},
                {"layout", scan.layoutSource.empty() ? json(nullptr) : json(scan.layoutSource)},
                {"count", scan.greenlets.size()},
                {"gc_objects", scan.gcObjects},
                {"threads", threads},
                {"without_tstate", unowned}};
    if (scan.rejected) out["rejected"] = scan.rejected;
    if (!scan.problem.empty()) out["problem"] = scan.problem;
    return out;
}

json nativeFrameJson(const NativeFrame& f) {
    json python = json::array();
    for (const auto& p : f.python) python.push_back(frameJson(p));
    json out = {{"pc", hexAddress(f.pc)},
                {"function", f.function.empty() ? json(nullptr) : json(f.function)},
                {"module", f.module.empty() ? json(nullptr) : json(f.module)},
                {"offset", f.module.empty() ? json(nullptr) : json(hexAddress(f.offset))},
                {"file", f.file.empty() ? json(nullptr) : json(f.file)},
                {"line", f.file.empty() ? json(nullptr) : json(f.line)},
                {"python", python}};
    if (f.inlined) out["inlined"] = true;
    if (f.tailCall) out["tail_call"] = true;
    json params = json::object();
    for (const auto& v : f.values)
        if (v.kind == FrameValue::Kind::Parameter) params[v.name] = hexAddress(v.value);
    if (!params.empty()) out["parameters"] = params;
    return out;
}

json nativeFramesJson(const std::vector<NativeFrame>& frames) {
    json out = json::array();
    for (const auto& f : frames) out.push_back(nativeFrameJson(f));
    return out;
}

// Where a thread waits: the native caller and the Python frame, as "at".
void addWhere(json& out, const NativeFrame& at, const std::optional<PyFrame>& py) {
    json where = json::object();
    if (!at.function.empty() || !at.file.empty())
        where["native"] = {{"function", at.function.empty() ? json(nullptr) : json(at.function)},
                           {"file", at.file.empty() ? json(nullptr) : json(at.file)},
                           {"line", at.file.empty() ? json(nullptr) : json(at.line)}};
    if (py) where["python"] = frameJson(*py);
    out["at"] = where;
}

json blockedOnJson(const BlockedOn& b) {
    json out = {{"kind", waitKindName(b.kind)},
                {"object", addressOrNull(b.object)},
                {"held_by", b.heldBy ? json(*b.heldBy) : json(nullptr)},
                {"function", b.function.empty() ? json(nullptr) : json(b.function)},
                {"frame", b.frame ? json(*b.frame) : json(nullptr)}};
    if (!b.call.empty()) out["call"] = b.call;
    if (!b.layoutSource.empty()) out["layout_source"] = b.layoutSource;
    if (!b.note.empty()) out["note"] = b.note;
    if (b.ownerReadLate) out["owner_read_after_resume"] = true;
    if (b.duringFinalization) out["runtime_finalizing"] = true;
    if (b.kind != WaitKind::None) addWhere(out, b.at, b.pythonAt);
    return out;
}

}  // namespace

std::string renderJsonTree(const Report& report, const RenderOptions& options) {
    json out;
    out["schema"] = 1;
    json target = {{"kind", report.target.kind == TargetKind::Live ? "live" : "core"},
                   {"pid", report.target.pid},
                   {"executable", report.target.executable}};
    if (report.target.stoppedMs) target["stopped_ms"] = *report.target.stoppedMs;
    if (report.target.readAfterResume) {
        json parts = json::array();
        for (const auto& p : *report.target.readAfterResume)
            parts.push_back({{"part", p.part}, {"reads", p.reads}, {"bytes", p.bytes}});
        target["read_after_resume"] = parts;
    }
    if (!report.target.namespacePids.empty()) target["namespace_pids"] = report.target.namespacePids;
    if (report.target.root != "/") target["root"] = report.target.root;
    if (!report.target.sysroot.empty()) target["sysroot"] = report.target.sysroot;
    json files = json::array();
    for (const auto& f : report.target.files) {
        json file = {{"module", f.module},
                     {"file", f.file.empty() ? json(nullptr) : json(f.file)},
                     {"via", f.via.empty() ? json(nullptr) : json(f.via)},
                     {"deleted", f.deleted},
                     {"build_id", f.buildId.empty() ? json(nullptr) : json(f.buildId)},
                     {"debug_file", f.debugFile.empty() ? json(nullptr) : json(f.debugFile)}};
        if (!f.problem.empty()) file["problem"] = f.problem;
        files.push_back(file);
    }
    target["files"] = files;
    target["arch"] = report.target.arch;
    target["crash"] = nullptr;
    if (report.crash) {
        const CrashReport& c = *report.crash;
        json crash = {{"lwp", c.signal.lwp},
                      {"signal", c.signal.signal},
                      {"signal_name", signalName(c.signal.signal)},
                      {"code", c.signal.haveSiginfo ? json(c.signal.code) : json(nullptr)},
                      {"fault_address", c.signal.faultAddress ? json(hexAddress(c.signal.faultAddress)) : json(nullptr)},
                      {"frames", nativeFramesJson(c.stack.frames)},
                      {"explained_by", c.explainedBy}};
        std::string codeName = c.signal.haveSiginfo ? signalCodeName(c.signal.signal, c.signal.code) : "";
        if (!codeName.empty()) crash["code_name"] = codeName;
        if (c.signal.haveSiginfo && c.signal.code <= 0 && c.signal.senderPid) crash["sender_pid"] = c.signal.senderPid;
        std::string explanation = crashExplanationWords(report);
        if (!explanation.empty()) crash["explanation"] = explanation;
        if (!c.fatalError.empty()) crash["fatal_error"] = c.fatalError;
        if (c.abort) {
            json abort = {{"kind", c.abort->kind},
                          {"type", c.abort->type.empty() ? json(nullptr) : json(c.abort->type)},
                          {"message", c.abort->message.empty() ? json(nullptr) : json(c.abort->message)}};
            if (!c.abort->pythonType.empty()) abort["python_type"] = c.abort->pythonType;
            if (!c.abort->note.empty()) abort["note"] = c.abort->note;
            crash["abort"] = abort;
        }
        if (!c.stack.end.empty()) crash["frames_end"] = c.stack.end;
        target["crash"] = crash;
    }
    out["target"] = target;

    bool withFrames = options.command != Command::Internals;
    json runtimes = json::array();
    for (const auto& rt : report.runtimes) {
        json interps = json::array();
        for (const auto& interp : rt.interpreters) {
            json tstates = json::array();
            for (const auto& ts : interp.tstates) {
                auto lwp = report.lwpFor(ts.address);
                json t = {{"address", hexAddress(ts.address)},
                          {"id", ts.id ? json(*ts.id) : json(nullptr)},
                          {"thread_id", hexAddress(ts.threadId)},
                          {"native_thread_id", ts.nativeThreadId ? json(*ts.nativeThreadId) : json(nullptr)},
                          {"lwp", lwp ? json(*lwp) : json(nullptr)},
                          {"holds_gil", interp.gilKnown && interp.gilHolder == ts.address}};
                auto place = report.places.find(ts.address);
                if (place != report.places.end()) {
                    const TstatePlace& p = place->second;
                    t["parked"] = !p.lwp && !p.runnerUnknown;
                    if (p.lwp) t["lwp_evidence"] = p.evidence;
                    else if (p.runnerUnknown) t["lwp_evidence"] = "unknown";  // runs, on a thread not found
                    // made_by_lwp only where the maker is not the runner; null: no such thread.
                    if (p.madeBy != p.lwp || (!p.madeBy && !p.lwp)) t["made_by_lwp"] = p.madeBy ? json(*p.madeBy) : json(nullptr);
                    if (p.madeBeforeFork) t["made_before_fork"] = true;
                }
                if (!ts.note.empty()) t["note"] = ts.note;
                if (ts.state) t["state"] = threadStateWords(*ts.state);
                if (withFrames) {
                    json frames = json::array();
                    for (const auto& f : ts.frames) frames.push_back(frameJson(f));
                    t["frames"] = frames;
                }
                if (const GreenletScan* scan = report.greenletScanOf(rt)) {
                    json greenlets = json::array();
                    for (const auto& g : scan->greenlets)
                        if (lwp && g.lwp == *lwp && g.interp == interp.address) greenlets.push_back(greenletJson(g));
                    t["greenlets"] = greenlets;
                }
                tstates.push_back(t);
            }
            json i = {{"id", interp.id},
                      {"address", hexAddress(interp.address)},
                      {"main", interp.main},
                      {"gil_holder", interp.gilKnown ? addressOrNull(interp.gilHolder) : json(nullptr)},
                      {"gil", interp.gilDisabled ? "disabled" : !interp.gilKnown ? "unknown" : interp.gilHolder ? "held" : "free"},
                      {"tstates", tstates}};
            if (!interp.note.empty()) i["note"] = interp.note;
            if (interp.gilHolder) i["gil_holder_source"] = gilSourceName(interp.gilHolderSource);
            if (interp.gilTakenBy) i["gil_taken_by"] = hexAddress(interp.gilTakenBy);
            if (auto st = report.interpreterStates.find(interp.address); st != report.interpreterStates.end()) {
                const InterpreterStateView& v = st->second;
                i["state"] = v.finalizing ? json(*v.finalizing ? "finalizing" : "running") : json(nullptr);
                i["state_layout"] = v.layoutSource;
                i["finalizing_lwp"] = v.finalizingLwp ? json(*v.finalizingLwp) : json(nullptr);
                if (v.finalizingLwp) i["finalizing_lwp_evidence"] = v.finalizingEvidence;
                i["finalizing_tstate"] = addressOrNull(v.finalizingTstate);
                i["gc_collecting"] = v.gcCollecting ? json(*v.gcCollecting) : json(nullptr);
                i["gc_lwp"] = v.gcLwp ? json(*v.gcLwp) : json(nullptr);
            }
            interps.push_back(i);
        }
        json r = {{"address", hexAddress(rt.address)},
                  {"module", rt.modulePath},
                  {"version", rt.version},
                  {"layout", rt.layout.source},
                  {"layout_cached", rt.layout.dwarfCached},
                  {"free_threaded", rt.layout.freeThreaded},
                  {"layout_sources", rt.layout.sources},
                  {"interpreters", interps}};
        if (!rt.notes.empty()) r["notes"] = rt.notes;
        if (const GreenletScan* scan = report.greenletScanOf(rt)) r["greenlet"] = greenletScanJson(report, *scan);
        runtimes.push_back(r);
    }
    out["runtimes"] = runtimes;

    json threads = json::array();
    for (const auto& t : report.threads) {
        json row = {{"lwp", t.lwp},
                    {"pthread", hexAddress(t.pthread)},
                    {"current_tstate", addressOrNull(t.currentTstate)},
                    {"autotss_tstate", addressOrNull(t.autotssTstate)}};
        json runs = json::array();  // the thread states running on it, innermost first
        for (uint64_t ts : report.tstatesOn(t.lwp)) runs.push_back(hexAddress(ts));
        row["tstates"] = runs;
        if (t.namespaceLwp) row["namespace_lwp"] = t.namespaceLwp;
        row["name"] = t.name ? json(*t.name) : json(nullptr);
        if (t.name) row["name_source"] = t.nameSource;
        if (t.autotssKey) row["autotss_key"] = *t.autotssKey;
        if (t.autotssThreadLocal) row["autotss_source"] = "_Py_tss_gilstate";
        if (!t.currentSource.empty()) row["current_source"] = t.currentSource;
        if (!t.currentStatus.empty()) row["current_status"] = t.currentStatus;
        if (t.debuggerThread) row["debugger_thread"] = t.debuggerThread;
        row["native_frames"] = nativeFramesJson(t.nativeFrames);
        if (!t.nativeEnd.empty()) row["native_end"] = t.nativeEnd;
        if (t.blockedOn) row["blocked_on"] = blockedOnJson(*t.blockedOn);
        threads.push_back(row);
    }
    out["threads"] = threads;
    if (options.command != Command::Tstates) {
        json internals = json::array();
        for (const auto& view : report.internals) {
            const auto& rec = view.record;
            json values = json::array();
            for (const auto& v : view.values) {
                json value = {{"lwp", v.lwp}, {"tstate", hexAddress(v.tstate)}};
                if (v.status != "set") value["status"] = v.status;
                values.push_back(value);
            }
            json record = {{"id", rec.id.raw},
                           {"version", rec.id.version},
                           {"address", addressOrNull(rec.address)},
                           {"interpreter", hexAddress(rec.interpreter)},
                           {"dict", rec.dictName},
                           {"istate", addressOrNull(rec.istate)},
                           {"tls_key", rec.tlsKey ? json(*rec.tlsKey) : json(nullptr)},
                           {"tls_values", values},
                           {"layout", rec.layout.source}};
            addModuleUses(record, rec.modules);
            if (!rec.problem.empty()) record["problem"] = rec.problem;
            if (options.types) {
                json types = json::array();
                for (const auto& t : rec.types) types.push_back({{"python", t.pythonName}, {"cpp", t.cppName}});
                record["types"] = types;
            }
            internals.push_back(record);
        }
        out["internals"] = internals;
        json locals = json::array();
        for (const auto& l : report.moduleLocals)
            locals.push_back({{"id", l.id}, {"interpreter", hexAddress(l.interpreter)}, {"dict", l.dictName},
                              {"address", hexAddress(l.keyAddress)}, {"module", l.module.empty() ? json(nullptr) : json(l.module)}});
        out["module_locals"] = locals;
        json nanobind = json::array();
        for (const auto& nb : report.nanobind) {
            json record = {{"key", nb.key}, {"version", nb.version}, {"abi_tag", nb.abiTag}, {"domain", nb.domain},
                           {"address", addressOrNull(nb.address)}, {"interpreter", hexAddress(nb.interpreter)},
                           {"dict", nb.dictName}};
            addModuleUses(record, nb.modules);
            if (!nb.problem.empty()) record["problem"] = nb.problem;
            if (options.types) {
                json types = json::array();
                for (const auto& t : nb.types) types.push_back({{"python", t.pythonName}, {"cpp", t.cppName}});
                record["types"] = types;
                record["types_layout"] = nb.layout;
            }
            nanobind.push_back(record);
        }
        out["nanobind"] = nanobind;
    }
    json findings = json::array();
    for (const auto& f : report.findings) {
        json finding = {{"code", findingName(f.code)},
                        {"severity", severityName(findingSeverity(f.code))},
                        {"lwp", f.lwp ? json(*f.lwp) : json(nullptr)},
                        {"tstate", addressOrNull(f.tstate)},
                        {"message", findingMessage(f)},
                        {"sources", findingSourceLines(f)}};
        if (!f.cycle.empty()) {
            json cycle = json::array();
            for (const auto& step : f.cycle) {
                json s = {{"lwp", step.lwp},
                          {"waits_for", waitKindName(step.waitsFor)},
                          {"object", addressOrNull(step.object)},
                          {"held_by", step.heldBy ? json(*step.heldBy) : json(nullptr)}};
                addWhere(s, step.at, step.pythonAt);
                cycle.push_back(s);
            }
            finding["cycle"] = cycle;
        }
        if (f.code == FindingCode::GilHeldWhileBlocked || f.code == FindingCode::StopTheWorldBlocked) {
            finding["function"] = f.function;
            finding["waiters"] = f.waiters;
        }
        if (!f.history.empty()) finding["history"] = historyJson(f);
        findings.push_back(finding);
    }
    if (!report.waitNotes.empty()) out["wait_notes"] = report.waitNotes;
    out["findings"] = findings;
    if (!report.warnings.empty()) out["warnings"] = report.warnings;
    makeUtf8(out);
    return out.dump(2) + "\n";
}

}  // namespace pytstates::reference
