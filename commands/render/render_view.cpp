// SPDX-License-Identifier: Apache-2.0
#include "commands/render/render_view.h"

#include <sstream>

#include "commands/analysis/tstate_runners.h"
#include "commands/render/finding_words.h"
#include "commands/render/render_python_state.h"
#include "commands/render/text_encoding.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

using json = nlohmann::json;

std::string quotedName(const std::string& name) {
    std::string out = "\"";
    for (char c : shown(name)) out += c == '"' ? std::string("\\x22") : std::string(1, c);
    return out + "\"";
}

std::string gilName(GilStand g) {
    switch (g) {
        case GilStand::Holds: return "holds";
        case GilStand::WaitsForGil: return "waits";
        case GilStand::WaitsOther: return "blocked";
        case GilStand::Running: return "released";
        case GilStand::NoGil: return "no-gil";
        case GilStand::Crashed: return "crashed";
        case GilStand::Unknown: break;
    }
    return "unknown";
}

std::string gilWords(const ThreadStack& s) {
    switch (s.gil) {
        case GilStand::Holds: return "holds the GIL";
        case GilStand::WaitsForGil:
            return "waits for the GIL" + (s.blocked ? heldByWords(s.blocked->kind, s.blocked->heldBy) : std::string());
        case GilStand::WaitsOther: return s.blocked ? blockedOnWords(*s.blocked) : std::string("is blocked");
        case GilStand::Running: return "does not hold the GIL";
        case GilStand::NoGil: return "runs without a GIL (free-threaded)";
        case GilStand::Crashed:
            // What the wait it was entering would have done, from the GIL's own state (as CRASH says it).
            if (s.blocked && s.blocked->kind == WaitKind::Gil && s.blocked->gilFree)
                return "crashed entering take_gil: it would have taken the GIL, which is free";
            if (s.blocked && s.blocked->kind == WaitKind::Gil && !s.blocked->heldBy)
                return "crashed entering take_gil (whether it would have waited for the GIL is not known)";
            return "crashed as it would " +
                   (s.blocked ? waitWouldWords(s.blocked->kind, s.blocked->object, s.blocked->call) + heldByWords(s.blocked->kind, s.blocked->heldBy)
                              : std::string("wait"));
        case GilStand::Unknown: break;
    }
    return "";
}

std::string threadLabel(const Report& report, int lwp) { return "LWP " + std::to_string(lwp) + lwpNameWords(report, lwp); }

// "on_recv_msg (/srv/app/logic.py:16)"
std::string frameName(const PyFrame& f) {
    std::string where = shown(f.file.empty() ? "<unknown file>" : f.file);
    if (f.line >= 0) where += ":" + std::to_string(f.line);
    return shown(f.function.empty() ? "<unknown>" : f.function) + " (" + where + ")";
}

// The frame's source line, stripped as py-bt shows it, and under it the instruction's columns
// (3.11+, on one line) marked as Python's tracebacks mark them.
void sourceWithColumns(std::ostringstream& out, const std::string& indent, const PyFrame& f, const std::string& sysroot) {
    if (f.line < 1) return;
    auto lines = sourceLines(sysroot, f.file, f.line, f.line);
    if (lines.empty()) return;
    const std::string& line = lines.front();
    size_t lead = line.find_first_not_of(" \t");
    if (lead == std::string::npos) return;
    size_t end = line.find_last_not_of(" \t\r\n");
    std::string code = line.substr(lead, end - lead + 1);
    out << indent << shown(code) << "\n";
    if (f.column < 0 || f.endColumn <= f.column || (f.endLine >= 0 && f.endLine != f.line)) return;
    size_t from = static_cast<size_t>(f.column), to = static_cast<size_t>(f.endColumn);
    if (from < lead || to > end + 1) return;
    if (from == lead && to == end + 1) return;  // the whole line: Python marks nothing either
    out << indent << std::string(from - lead, ' ') << std::string(to - from, '^') << "\n";
}

void localsText(std::ostringstream& out, const std::string& indent, const std::vector<ViewLocal>& locals) {
    for (const auto& l : locals) out << indent << shown(l.name) << " = " << shown(l.repr) << "\n";
}

json localJson(const ViewLocal& l) {
    return json{{"name", l.name}, {"kind", l.kind}, {"type", l.type}, {"address", l.address}, {"repr", l.repr}};
}

std::string cFrameWords(const BtOptions& o, size_t group) {
    if (group < o.evalLevels.size() && o.evalLevels[group] >= 0) return "  [C #" + std::to_string(o.evalLevels[group]) + "]";
    return "";
}

// number: "#12" (the debugger's or ours), or "" when the debugger has no frame at that pc.
std::string nativeFrameLine(const std::string& number, const NativeFrame& f) {
    std::string line = number.empty() ? std::string("    ") : number + (number.size() < 3 ? "  " : " ");
    if (!f.inlined) line += hexAddress(f.pc) + " in ";
    line += f.function.empty() ? std::string("??") : shown(f.function);
    if (f.inlined) line += " (inlined)";
    if (!f.file.empty()) line += " at " + shown(f.file) + ":" + std::to_string(f.line);
    else if (!f.module.empty()) line += " from " + shown(f.module);
    return line;
}

}  // namespace

std::string notFoundWords(const std::string& name) { return "'" + shown(name) + "' not found"; }

std::string stackHeader(const ThreadStack& s) {
    std::string out = "LWP " + std::to_string(s.lwp);
    if (s.name) out += " " + quotedName(*s.name);
    out += ": thread state " + hexAddress(s.tstate);
    if (s.interp) out += " of interpreter " + std::to_string(s.interp->id);
    if (s.runtime) out += " (Python " + s.runtime->version + ")";
    std::string gil = gilWords(s);
    if (!gil.empty()) out += ", " + gil;
    if (s.tstates.size() > 1) {
        out += "; under it";
        for (size_t i = 1; i < s.tstates.size(); ++i) out += (i == 1 ? " " : ", ") + hexAddress(s.tstates[i]);
    }
    return out;
}

json frameJson(const ViewFrame& v) {
    const PyFrame& f = v.frame;
    json out{{"index", v.index}, {"function", replaceInvalidUtf8(f.function)}, {"file", replaceInvalidUtf8(f.file)}, {"line", f.line},
             {"column", f.column}, {"end_line", f.endLine}, {"end_column", f.endColumn}, {"address", f.address}, {"code", f.code},
             {"entry", f.entry}, {"eval_group", v.evalGroup}, {"tstate", v.tstate}};
    // As the report's JSON gives them (docs/json.md): a name that is not UTF-8 also as its exact bytes,
    // which gdb's bt rows show as \xNN (gdb_text.py).
    if (!isValidUtf8(f.function)) out["function_bytes"] = hexBytes(f.function);
    if (!isValidUtf8(f.file)) out["file_bytes"] = hexBytes(f.file);
    return out;
}

json stackAnswer(const ThreadStack& s) {
    json frames = json::array();
    for (const auto& f : s.frames) frames.push_back(frameJson(f));
    json tstates = json::array();
    for (uint64_t t : s.tstates) tstates.push_back(t);
    return json{{"lwp", s.lwp},
                {"tstate", s.tstate},
                {"tstates", tstates},
                {"interpreter", s.interp ? s.interp->address : 0},
                {"interpreter_id", s.interp ? s.interp->id : -1},
                {"version", s.runtime ? s.runtime->version : ""},
                {"thread_name", s.name ? json(*s.name) : json(nullptr)},
                {"gil", gilName(s.gil)},
                {"gil_line", gilWords(s)},
                {"eval_groups", s.evalGroups},
                {"frames", frames},
                {"text", stackHeader(s) + "\n"}};
}

json btAnswer(DebuggerView& view, const ThreadStack& s, const BtOptions& o) {
    std::ostringstream out;
    out << stackHeader(s) << "\n";
    bool locals = o.locals || o.full;
    if (!o.native) {
        if (s.frames.empty()) out << "  (no Python frame)\n";
        for (const auto& f : s.frames) {
            std::string mark = o.selected && *o.selected == f.index ? "*" : " ";
            out << mark << "#" << f.index << (f.index < 10 ? "  " : " ") << frameName(f.frame) << cFrameWords(o, f.evalGroup) << "\n";
            sourceWithColumns(out, "      ", f.frame, o.sysroot);
            if (o.full) out << "      frame " << hexAddress(f.frame.address) << ", code " << hexAddress(f.frame.code) << "\n";
            if (locals) localsText(out, "      ", view.locals(f));
        }
        return json{{"text", out.str()}, {"lwp", s.lwp}};
    }
    // The native stack, each eval-loop frame followed by the Python frames it runs (pystack's and
    // py-spy's --native, innermost first as gdb's bt).
    const NativeStack& stack = view.nativeStack(s.lwp);
    size_t next = 0;     // the next Python frame's index (they merge in order)
    size_t matched = 0;  // the next debugger frame to match
    for (size_t i = 0; i < stack.frames.size(); ++i) {
        const NativeFrame& f = stack.frames[i];
        std::string number = "#" + std::to_string(i);
        if (!o.debuggerFrames.empty()) {
            number.clear();
            for (size_t j = matched; j < o.debuggerFrames.size(); ++j)
                if (o.debuggerFrames[j].second == f.pc) {
                    number = "#" + std::to_string(o.debuggerFrames[j].first);
                    matched = j + 1;
                    break;
                }
        }
        out << nativeFrameLine(number, f) << "\n";
        for (const auto& py : f.python) {
            size_t index = next++;
            std::string mark = o.selected && *o.selected == index ? "*" : " ";
            out << "    " << mark << "(Python) #" << index << " " << frameName(py) << "\n";
            if (locals && index < s.frames.size()) localsText(out, "          ", view.locals(s.frames[index]));
        }
    }
    if (!stack.end.empty()) out << "(" << shown(stack.end) << ")\n";
    return json{{"text", out.str()}, {"lwp", s.lwp}};
}

json frameAnswer(const ViewFrame& f, const BtOptions& o) {
    std::ostringstream out;
    out << "#" << f.index << (f.index < 10 ? "  " : " ") << frameName(f.frame) << cFrameWords(o, f.evalGroup) << "\n";
    sourceWithColumns(out, "      ", f.frame, o.sysroot);
    json answer = frameJson(f);
    answer["text"] = out.str();
    return answer;
}

json localsAnswer(const ViewFrame& f, const std::vector<ViewLocal>& locals) {
    std::ostringstream out;
    localsText(out, "", locals);
    if (locals.empty()) out << "(no locals in " << frameName(f.frame) << ")\n";
    json list = json::array();
    for (const auto& l : locals) list.push_back(localJson(l));
    return json{{"frame", f.index}, {"function", f.frame.function}, {"locals", list}, {"text", out.str()}};
}

json printAnswer(const ViewName& found) {
    json answer = localJson(found.value);
    answer["scope"] = found.scope;
    answer["text"] = found.scope + " '" + shown(found.value.name) + "' = " + shown(found.value.repr) + "\n";
    return answer;
}

json listAnswer(const ViewFrame& f, const std::vector<std::string>& lines, int start) {
    std::ostringstream out;
    json rows = json::array();
    for (size_t i = 0; i < lines.size(); ++i) {
        int n = start + static_cast<int>(i);
        std::string number = (n == f.frame.line ? ">" : "") + std::to_string(n);
        std::string pad = number.size() < 4 ? std::string(4 - number.size(), ' ') : "";
        out << pad << number << "    " << shown(lines[i]) << "\n";
        rows.push_back(json{{"line", n}, {"text", lines[i]}});
    }
    return json{{"file", f.frame.file}, {"line", f.frame.line}, {"start", start},
                {"end", start + static_cast<int>(lines.size()) - 1}, {"lines", rows}, {"text", out.str()}};
}

json tstateAnswer(const Report& report, const TstateFacts& t) {
    std::ostringstream out;
    std::string summary;
    json caches = json::array();
    std::vector<std::string> cacheLines;
    for (const auto& c : t.caches) {
        std::string line = sourceWords(c) + " on LWP " + std::to_string(sourceLwp(c).value_or(0));
        cacheLines.push_back(line);
        json row{{"lwp", sourceLwp(c).value_or(0)}, {"words", line}};
        if (const auto* p = std::get_if<source::Pybind11Key>(&c)) {
            row["kind"] = "pybind11";
            row["key"] = p->key;
            row["record"] = p->record;
        } else if (const auto* a = std::get_if<source::AutoTss>(&c)) {
            row["kind"] = "gilstate";
            row["key"] = a->threadLocal ? json(nullptr) : json(a->key);
        } else if (const auto* cur = std::get_if<source::Current>(&c)) {
            row["kind"] = "current";
            row["variable"] = cur->variable;
        }
        caches.push_back(row);
    }
    json findings = json::array();
    bool stale = false;
    for (const Finding* f : t.findings) {
        findings.push_back(json{{"code", findingName(f->code)}, {"severity", severityName(findingSeverity(f->code))}, {"message", findingMessage(*f)}});
        stale = stale || f->code == FindingCode::StaleTstate;
    }
    const bool runs = t.place && t.place->lwp.has_value();
    const int runner = runs ? t.place->lwp.value() : 0;
    if (t.listed) {
        out << "thread state " << hexAddress(t.address) << " of interpreter " << (t.interp ? std::to_string(t.interp->id) : "?");
        if (t.interp) out << " (" << hexAddress(t.interp->address) << ")";
        if (t.runtime) out << ", Python " << t.runtime->version;
        out << "\n";
        if (runs) {
            out << "  runs on " << threadLabel(report, runner) << (t.holdsGil ? ", holds the GIL" : "") << " ("
                << runnerEvidenceWords(t.place->evidence) << ")\n";
            summary = threadLabel(report, runner) + (t.holdsGil ? ", holds the GIL" : "");
        } else if (t.place && t.place->runnerUnknown) {
            out << "  runs (it holds the GIL) on a thread no evidence names\n";
            summary = "runs on an unknown thread, holds the GIL";
        } else {
            out << "  parked: no thread runs it\n";
            summary = "parked";
        }
        if (t.place && t.place->madeBy) {
            out << "  made by " << threadLabel(report, *t.place->madeBy) << (t.place->madeBeforeFork ? " (before a fork)" : "") << "\n";
            if (!runs) summary += ", made by LWP " + std::to_string(*t.place->madeBy);
        }
        if (t.state && t.state->id) out << "  id " << *t.state->id << "\n";
    } else {
        out << "thread state " << hexAddress(t.address) << ": in no interpreter's thread list" << (stale ? " (stale)" : "") << "\n";
        if (t.memory) out << "  " << tstateMemoryWords(*t.memory) << "\n";
        summary = stale ? "stale: in no interpreter's list" : "in no interpreter's list";
        if (!t.caches.empty()) summary += "; " + cacheLines.front();
        if (t.caches.size() > 1) summary += " (and " + std::to_string(t.caches.size() - 1) + " more)";
    }
    if (t.listed && !t.caches.empty() && !runs) summary += "; " + cacheLines.front();
    for (const auto& line : cacheLines) out << "  cached: " << line << "\n";
    for (const Finding* f : t.findings)
        out << "  " << severityName(findingSeverity(f->code)) << " " << findingName(f->code) << ": " << findingMessage(*f) << "\n";
    json frames = json::array();
    if (!t.frames.empty()) out << "  Python stack (innermost first):\n";
    for (const auto& f : t.frames) {
        frames.push_back(frameJson(f));
        out << "    #" << f.index << (f.index < 10 ? "  " : " ") << frameName(f.frame) << "\n";
    }
    return json{{"address", t.address},
                {"listed", t.listed},
                {"stale", stale},
                {"interpreter", t.interp ? t.interp->address : 0},
                {"interpreter_id", t.interp ? t.interp->id : -1},
                {"lwp", runs ? json(runner) : json(nullptr)},
                {"parked", t.listed && !runs && !(t.place && t.place->runnerUnknown)},
                {"made_by", t.place && t.place->madeBy ? json(*t.place->madeBy) : json(nullptr)},
                {"evidence", t.place ? t.place->evidence : ""},
                {"holds_gil", t.holdsGil},
                {"caches", caches},
                {"findings", findings},
                {"memory", t.memory ? json(tstateMemoryWords(*t.memory)) : json(nullptr)},
                {"frames", frames},
                {"summary", summary},
                {"text", out.str()}};
}

json interpreterAnswer(const Report& report, const Interpreter& interp) {
    std::string summary = "interpreter " + std::to_string(interp.id) + (interp.main ? " (main)" : "") + ", " +
                          std::to_string(interp.tstates.size()) + " thread state" + (interp.tstates.size() == 1 ? "" : "s");
    std::optional<int> holder;
    if (interp.gilDisabled) summary += ", no GIL";
    else if (interp.gilKnown && !interp.gilHolder) summary += ", GIL free";
    else if (interp.gilKnown) {
        holder = report.gilHolderLwp(interp);
        summary += ", GIL held by " + (holder ? threadLabel(report, *holder) : "thread state " + hexAddress(interp.gilHolder));
    }
    return json{{"address", interp.address}, {"id", interp.id}, {"main", interp.main}, {"tstates", interp.tstates.size()},
                {"gil_holder", interp.gilHolder}, {"gil_holder_lwp", holder ? json(*holder) : json(nullptr)},
                {"summary", summary}, {"text", summary + "\n"}};
}

json objectAnswer(uint64_t address, const ObjectFacts& o) {
    return json{{"address", address}, {"type", o.type}, {"repr", o.repr}, {"text", shown(o.repr) + "\n"},
                {"summary", shown(o.repr)}};
}

json foundThreadAnswer(const Report& report, const FoundThread& found) {
    std::string text = found.lwp ? threadLabel(report, *found.lwp) : std::string("no thread");
    if (found.matched == "thread state") text += " runs thread state " + hexAddress(found.address);
    else if (found.matched == "thread name") text += " is Python's thread " + quotedName(found.name);
    else if (found.matched == "asyncio task") text += " runs the event loop of task " + quotedName(found.name) + " (" + hexAddress(found.address) + ")";
    return json{{"lwp", found.lwp ? json(*found.lwp) : json(nullptr)}, {"matched", found.matched}, {"address", found.address},
                {"name", found.name}, {"text", text + "\n"}};
}

json gilHolderAnswer(const Report& report) {
    std::ostringstream out;
    json rows = json::array();
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters) {
            json a = interpreterAnswer(report, interp);
            rows.push_back(json{{"interpreter", interp.address}, {"id", interp.id}, {"holder", interp.gilHolder},
                                {"lwp", a["gil_holder_lwp"]}, {"gil_known", interp.gilKnown}, {"gil_disabled", interp.gilDisabled}});
            out << a["summary"].get<std::string>() << "\n";
        }
    return json{{"interpreters", rows}, {"text", out.str()}};
}

}  // namespace pytstates
