// SPDX-License-Identifier: Apache-2.0
// The one-screen text view: runtimes, interpreters and thread states with their stacks, then one
// row per OS thread with every per-thread pointer side by side.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include <csignal>
#include <cstdint>

#include "commands/render/render_greenlets.h"
#include "commands/render/render_stacks.h"
#include "commands/render/render_tasks.h"
#include "commands/render/render.h"
#include "commands/render/finding_words.h"
#include "commands/render/render_python_state.h"
#include "commands/render/summary.h"
#include "commands/render/text_encoding.h"
#include "commands/render/text_layout.h"
#include "symbols/core/signal_names.h"
#include "symbols/pybind11/internals_id.h"
#include "symbols/text/base_name.h"

namespace pytstates {

namespace {

constexpr size_t kCrashFramesShown = 32;

std::string pad(const std::string& s, size_t width) { return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' '); }

std::string layoutWords(const std::string& source) {
    if (source == "dwarf") return "layout from DWARF";
    if (source == "debug_offsets") return "layout from _Py_DebugOffsets";
    return "built-in layout table";
}

std::string threadLabel(const Report& report, int lwp, const RenderOptions& options) {
    std::string label = "LWP " + std::to_string(lwp);
    if (options.showDebuggerThreads)
        for (const auto& t : report.threads)
            if (t.lwp == lwp && t.debuggerThread) label += " (thread " + std::to_string(t.debuggerThread) + ")";
    return label + lwpNameWords(report, lwp);
}

// C++ names of templates and lambdas run to hundreds of characters: on one screen, long ones keep
// their shape with template arguments and parameter lists elided ("initialize<…>(…)::{lambda(…)#3}::_FUN").
// JSON keeps them whole.
std::string shortFunction(const std::string& name) {
    constexpr size_t kLong = 60;
    if (name.size() <= kLong) return name;
    std::string out;
    int depth = 0;
    bool elided = false;
    for (char c : name) {
        bool open = c == '<' || c == '(', close = c == '>' || c == ')';
        if (open && depth++ == 0) {
            out += c;
            elided = false;
            continue;
        }
        if (close && depth > 0 && --depth == 0) {
            out += (elided ? "\xe2\x80\xa6" : "") + std::string(1, c);  // "operator()" stays
            continue;
        }
        if (depth == 0) out += c;
        else elided = true;
    }
    return out;
}

// "#3  0x00007f3a68265fd6 take_gil (tstate=0x7f3a60000d10)  ceval_gil.h:231  (libpython3.11.so.1.0+0x265fd6)"
// narrow: an inlined frame's empty pc column left out, for a terminal with no room to align it.
std::string nativeFrameLine(const NativeFrame& f, size_t index, bool narrow) {
    char pc[32];
    std::snprintf(pc, sizeof pc, "0x%016llx", static_cast<unsigned long long>(f.pc));
    std::string line = "#" + std::to_string(index) + "  " + (f.inlined ? std::string(narrow ? 0 : 19, ' ') : std::string(pc) + " ") +
                       (f.function.empty() ? "??" : shown(shortFunction(f.function)));
    std::string params;
    for (const auto& v : f.values)
        if (v.kind == FrameValue::Kind::Parameter && v.name.find("->") == std::string::npos)
            params += (params.empty() ? "" : ", ") + shown(v.name) + "=" + hexAddress(v.value);
    if (!params.empty()) line += " (" + params + ")";
    if (f.inlined) line += " [inlined]";
    if (f.tailCall) line += " [tail call]";
    if (!f.file.empty()) line += "  " + shown(baseName(f.file)) + ":" + std::to_string(f.line);
    if (!f.module.empty()) {
        char off[32];
        std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
        line += "  (" + shown(baseName(f.module)) + off + ")";
    }
    return line;
}

void renderNativeFrames(std::ostringstream& out, const std::vector<NativeFrame>& frames, const std::string& end,
                        const std::string& indent, size_t limit, size_t width) {
    for (size_t i = 0; i < frames.size() && i < limit; ++i) {
        out << indent << nativeFrameLine(frames[i], i, width && width < 120) << "\n";
        for (const auto& p : frames[i].python)
            out << frameCall(indent + "      Python: ", p, "", width) << "\n";
    }
    if (frames.size() > limit) out << indent << "(" << frames.size() - limit << " more frames: --json has them all)\n";
    if (!end.empty()) out << indent << "(the stack ends here: " << shown(end) << ")\n";
}

// The wait the crashing thread was entering, as memory shows it: never a hang, since a thread
// that faulted or aborted itself waits for nothing.
std::string enteringWords(const Report& report, const CrashReport& c) {
    const BlockedOn& b = *c.entering;
    int lwp = c.signal.lwp;
    std::string name = bareFunctionName(b.function);
    std::string words = "it was entering " + name;
    std::string tstate;  // the state it was handed, where the crash's frames have the parameter
    for (const auto& f : c.stack.frames)
        if (bareFunctionName(f.function) == name)
            for (const auto& v : f.values)
                if (v.kind == FrameValue::Kind::Parameter && v.name == "tstate" && v.value) tstate = hexAddress(v.value);
    if (b.frame) words += " (frame #" + std::to_string(*b.frame) + (tstate.empty() ? "" : ", tstate=" + tstate) + ")";
    std::string unless = "had it not taken " + signalName(c.signal.signal) + ", it would ";
    if (b.kind == WaitKind::Gil && b.heldBy == lwp) {
        uint64_t held = 0;
        for (const auto& rt : report.runtimes)
            for (const auto& interp : rt.interpreters)
                if (report.gilHolderLwp(interp) == lwp) held = interp.gilHolder;
        return words + " while this thread holds the GIL" + (held ? " with " + hexAddress(held) : std::string()) + ": " + unless +
               "have waited for itself";
    }
    // The GIL's own state says what take_gil would have done: take a free GIL, wait for a holder.
    if (b.kind == WaitKind::Gil && b.gilFree) return words + ": " + unless + "have taken the GIL, which is free";
    if (b.kind == WaitKind::Gil && !b.heldBy && b.gilHolder)
        return words + ": " + unless + "wait for the GIL, held by thread state " + hexAddress(b.gilHolder) + ", which no thread is found to run";
    if (b.kind == WaitKind::Gil && !b.heldBy)
        return words + ": " + unless + "have taken the GIL or waited for it (the GIL's state is unknown)";
    return words + ": " + unless + waitWouldWords(b.kind, b.object, b.call) + heldByWords(b.kind, b.heldBy);
}

// 3.13+'s _PyThreadState_Attach aborts when the thread already has a current thread state: which
// one that was, read from the thread's own TLS, is what the reader needs next.
std::string oldThreadStateWords(const Report& report, const CrashReport& c) {
    static const std::string kOldState = "non-NULL old thread state";
    const std::string& e = c.fatalError;
    if (e.size() < kOldState.size() || e.compare(e.size() - kOldState.size(), kOldState.size(), kOldState) != 0) return {};
    for (const auto& t : report.threads) {
        if (t.lwp != c.signal.lwp || !t.currentStatus.empty() || !t.currentTstate) continue;
        bool holdsGil = false;
        for (const auto& rt : report.runtimes)
            for (const auto& interp : rt.interpreters) holdsGil = holdsGil || interp.gilHolder == t.currentTstate;
        return "the old thread state is this thread's current one, " + hexAddress(t.currentTstate) +
               (holdsGil ? " (it holds the GIL)" : "") + ": _PyThreadState_Attach was called for another while the thread had it";
    }
    return {};
}

void renderCrash(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    const CrashReport& c = *report.crash;
    const CrashSignal& s = c.signal;
    out << paint("CRASH", Paint::Crash, options.color) << "  " << threadLabel(report, s.lwp, options) << "  " << signalName(s.signal);
    if (s.haveSiginfo) {
        std::string code = signalCodeName(s.signal, s.code), words = signalCodeWords(s.signal, s.code);
        if (!code.empty()) out << " (" << code << (words.empty() ? "" : ": " + words) << ")";
        if (s.code > 0 && s.code != 0x80 && (s.signal == SIGSEGV || s.signal == SIGBUS || s.faultAddress))
            out << " at " << hexAddress(s.faultAddress);
        if (s.code <= 0 && s.senderPid)
            out << (s.senderPid == report.target.pid ? " by the process itself" : " by process " + std::to_string(s.senderPid) + " (uid " + std::to_string(s.senderUid) + ")");
        else if (s.code <= 0)  // si_pid 0: a sender the target's PID namespace cannot name
            out << " by a sender it cannot name (si_pid 0: outside its PID namespace, or the kernel)";
    }
    out << "\n";
    if (c.abort && c.abort->kind != "fatal-error") {
        const AbortInfo& a = *c.abort;
        std::string line = a.kind == "assert" ? "assertion failed: " : a.kind == "uncaught-exception" ? "uncaught exception " : "abort message: ";
        if (!a.type.empty()) line += a.type + (a.message.empty() ? "" : ": ");
        line += a.message.empty() && a.type.empty() ? "(" + (a.note.empty() ? std::string("its text is unknown") : a.note) + ")" : a.message;
        out << wrapText(shown(line), options.width, "  ");
    }
    if (!c.fatalError.empty()) out << wrapText(shown(c.fatalError), options.width, "  ");
    std::string oldState = oldThreadStateWords(report, c);
    if (!oldState.empty()) out << wrapText(oldState, options.width, "  ");
    std::string explanation = crashExplanationWords(report);
    if (!explanation.empty()) out << wrapText(shown(explanation), options.width, "  ");
    if (c.entering) out << wrapText(shown(enteringWords(report, c)), options.width, "  ");
    renderNativeFrames(out, c.stack.frames, c.stack.end, "  ", kCrashFramesShown, options.width);
    out << "\n";
}

// before + "at f (/srv/app.py:7), native g (file.c:9)" + after, on a line of width columns; empty
// when neither frame is known.
std::string waitAtLine(const std::string& before, const NativeFrame& at, const std::optional<PyFrame>& py, const std::string& after,
                       size_t width) {
    std::string native;
    if (!at.function.empty()) {
        native = shown(shortFunction(at.function));
        if (!at.file.empty()) native += " (" + shown(baseName(at.file)) + ":" + std::to_string(at.line) + ")";
    }
    if (py && !py->function.empty()) return frameCall(before + "at ", *py, (native.empty() ? "" : ", native " + native) + after, width);
    return native.empty() ? std::string() : before + "at " + native + after;
}

// The hang first, as the crash: each cycle as a chain, one line per thread with where it waits;
// the GIL's holder blocked with the threads that wait for it.
void renderHang(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    std::map<int, const ThreadRow*> rows;
    for (const auto& t : report.threads) rows[t.lwp] = &t;
    std::set<int> gilHolders;
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters)
            if (auto lwp = report.gilHolderLwp(interp)) gilHolders.insert(*lwp);
    bool any = false;
    for (const auto& f : report.findings) {
        const FindingCodeInfo& info = findingInfo(f.code);
        if (!info.hang || !f.taskCycle.empty() || info.subject == FindingSubject::Task) continue;  // tasks: renderTaskHang
        if (info.subject == FindingSubject::Cycle) {
            any = true;
            out << paint("HANG", Paint::Hang, options.color) << "  deadlock: " << (f.cycle.size() == 1 ? std::string("1 thread waits for itself") : std::to_string(f.cycle.size()) + " threads wait for each other") << "\n";
            for (size_t i = 0; i < f.cycle.size(); ++i) {
                const CycleStep& s = f.cycle[i];
                const ThreadRow* row = rows.count(s.lwp) ? rows[s.lwp] : nullptr;
                std::string call = row && row->blockedOn ? row->blockedOn->call : "";
                out << "  " << (i ? "-> " : "   ") << threadLabel(report, s.lwp, options) << "  "
                    << (gilHolders.count(s.lwp) && s.waitsFor != WaitKind::Gil ? "holds the GIL, " : "")
                    << shown(waitWords(s.waitsFor, s.object, call) + pythonWaitWords(s.pythonKind, s.pythonObject, s.pythonName) +
                             heldByWords(s.waitsFor, s.heldBy))
                    << "\n";
                std::string at = waitAtLine("         ", s.at, s.pythonAt, "", options.width);
                if (!at.empty()) out << at << "\n";
                // Where the holder holds it, when a with-block is the evidence.
                if (s.holderEvidence == "with-block" && s.holderAt && s.heldBy)
                    out << frameCall("         LWP " + std::to_string(*s.heldBy) + " holds it" +
                                         (s.holderName.empty() ? "" : " as `" + shown(s.holderName) + "`") + " in a with-block: ",
                                     *s.holderAt, s.holderWithLine > 0 ? ", `with` at line " + std::to_string(s.holderWithLine) : "",
                                     options.width)
                        << "\n";
            }
            out << "  -> back to LWP " << f.cycle.front().lwp << "\n";
        } else if (info.subject == FindingSubject::Waiters && f.lwp && rows.count(*f.lwp)) {
            // One blocked thread, and the threads that wait for it: for the GIL, or to stop the world.
            any = true;
            bool gil = f.code == FindingCode::GilHeldWhileBlocked;
            const BlockedOn& b = *rows[*f.lwp]->blockedOn;
            if (gil)
                out << paint("HANG", Paint::Hang, options.color) << "  the GIL's holder is blocked; " << f.waiters.size() << (f.waiters.size() == 1 ? " thread waits" : " threads wait")
                    << " for the GIL\n";
            else
                out << paint("HANG", Paint::Hang, options.color) << "  a stop of the world waits for a blocked thread\n";
            out << "     " << threadLabel(report, *f.lwp, options) << (gil ? "  holds the GIL and " : "  is attached and ")
                << shown(waitWords(b.kind, b.object, b.call) + heldByWords(b.kind, b.heldBy)) << "\n";
            std::string at = waitAtLine("         ", b.at, b.pythonAt, "", options.width);
            if (!at.empty()) out << at << "\n";
            for (int w : f.waiters) {
                const BlockedOn* wb = rows.count(w) && rows[w]->blockedOn ? &*rows[w]->blockedOn : nullptr;
                out << "  <- " << threadLabel(report, w, options) << "  "
                    << (gil ? "waits for the GIL" : shown(waitWords(WaitKind::StopTheWorld, 0, wb ? wb->call : "")) + ", waiting for it to detach")
                    << "\n";
                if (wb) {
                    std::string wat = waitAtLine("         ", wb->at, wb->pythonAt, "", options.width);
                    if (!wat.empty()) out << wat << "\n";
                }
            }
        }
    }
    if (any) {
        for (const auto& n : report.waitNotes) out << "  note: " << shown(n) << "\n";
        out << "\n";
    }
}

void renderNativeStacks(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    out << "\nNATIVE STACKS (innermost first; Python frames under the eval-loop frame that runs them)\n";
    for (const auto& t : report.threads) {
        out << "  " << threadLabel(report, t.lwp, options) << "\n";
        renderNativeFrames(out, t.nativeFrames, t.nativeEnd, "    ", SIZE_MAX, options.width);
    }
}

void renderFindings(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    if (report.findings.empty()) {
        out << "No findings.\n\n";
        return;
    }
    size_t errors = 0;
    for (const auto& f : report.findings) errors += findingSeverity(f.code) == Severity::Error;
    out << "FINDINGS (" << report.findings.size() << ", " << errors << " error" << (errors == 1 ? "" : "s") << ")\n";
    for (const auto& f : report.findings) {
        Severity severity = findingSeverity(f.code);
        std::string word = pad(severityName(severity), 8);
        if (severity != Severity::Info) word = paint(word, severity == Severity::Error ? Paint::Error : Paint::Warning, options.color);
        out << "  " << word << pad(findingName(f.code), 26);
        if (f.lwp) out << threadLabel(report, *f.lwp, options);
        if (f.tstate) out << "  tstate " << hexAddress(f.tstate);
        out << "\n" << wrapText(shown(findingMessage(f)), options.width, "      ");
        for (const auto& line : f.historyWords) out << wrapText(shown(line), options.width, "      ");
        // A hang's evidence is spread over threads: say where each fact was read.
        if (findingInfo(f.code).hang)
            for (const auto& s : findingSourceLines(f)) out << wrapText("from " + shown(s), options.width, "      ");
    }
    out << "\n";
}

void renderInternals(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    out << "PYBIND11 INTERNALS (" << report.internals.size() << " record" << (report.internals.size() == 1 ? "" : "s") << ")\n";
    if (report.internals.empty()) out << "  none: no interpreter dict holds a __pybind11_internals_v* capsule\n";
    for (const auto& view : report.internals) {
        const auto& rec = view.record;
        out << "  " << shown(rec.id.raw) << "\n";
        out << "      version " << rec.id.version;
        if (!rec.id.abi.empty()) out << ", " << shown(rec.id.compiler + " " + rec.id.stdlib + " " + describeAbi(rec.id.abi));
        out << "\n";
        if (!rec.problem.empty()) out << "      problem: " << shown(rec.problem) << "\n";
        if (rec.address && rec.layout.source.empty()) {
            out << "      internals pointer " << hexAddress(rec.address) << " in the " << rec.dictName << " of interpreter "
                << hexAddress(rec.interpreter) << "\n";
        } else if (rec.address) {
            out << "      internals " << hexAddress(rec.address) << " in the " << rec.dictName << " of interpreter "
                << hexAddress(rec.interpreter) << "; istate " << hexAddress(rec.istate)
                << (rec.istate == rec.interpreter ? " (matches)" : " (DIFFERENT)") << "; layout: " << rec.layout.source << "\n";
        }
        if (rec.tlsKey) out << "      TLS: pthread key " << *rec.tlsKey << " (Py_tss_t at " << hexAddress(rec.tssAddress) << ")\n";
        out << "      used by:";
        if (rec.modules.empty()) out << " (no loaded module's read-only data holds this ID)";
        for (const auto& m : rec.modules) out << "\n        " << shown(m.path) << (m.confirmed ? "  (" + shown(m.how) + ")" : "");
        out << "\n";
        if (rec.tlsKey) {
            out << "      per-thread values:";
            if (view.values.empty()) out << " none set";
            out << "\n";
            for (const auto& v : view.values) {
                auto owner = report.lwpFor(v.tstate);
                out << "        LWP " << pad(std::to_string(v.lwp), 8) << hexAddress(v.tstate);
                if (!report.listed(v.tstate)) out << "  NOT IN ANY THREAD LIST";
                else if (owner && *owner != v.lwp) out << "  runs on LWP " << *owner;
                if (v.status != "set") out << "  (" << shown(v.status) << ")";
                out << "\n";
            }
        }
        if (options.types) {
            out << "      registered types (" << rec.types.size() << "):\n";
            for (const auto& t : rec.types) out << "        " << pad(shown(t.pythonName), 40) << shown(t.cppName) << "\n";
        }
    }
    out << "\n";
}

void renderModuleLocals(std::ostringstream& out, const Report& report) {
    if (report.moduleLocals.empty()) return;
    out << "PYBIND11 MODULE-LOCAL RECORDS (" << report.moduleLocals.size()
        << "; one module's own registrations, no thread-state key: not internals records)\n";
    for (const auto& l : report.moduleLocals) {
        out << "  " << shown(l.id) << "\n      in the " << l.dictName << " of interpreter " << hexAddress(l.interpreter)
            << "; made by " << (l.module.empty() ? "no loaded module (the address " + hexAddress(l.keyAddress) + " in its name is in none)"
                                                 : shown(l.module) + " (the address " + hexAddress(l.keyAddress) + " in its name is in it)")
            << "\n";
    }
    out << "\n";
}

void renderNanobind(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    if (report.nanobind.empty()) return;
    out << "NANOBIND INTERNALS (" << report.nanobind.size() << " record" << (report.nanobind.size() == 1 ? "" : "s")
        << "; nanobind keeps no thread-state cache: its gil_scoped_acquire is PyGILState_Ensure/Release)\n";
    for (const auto& nb : report.nanobind) {
        out << "  " << shown(nb.key) << "\n";
        out << "      version " << nb.version << ", ABI " << shown(nb.abiTag) << (nb.domain.empty() ? "" : ", domain " + shown(nb.domain)) << "\n";
        if (!nb.problem.empty()) out << "      problem: " << shown(nb.problem) << "\n";
        if (nb.address)
            out << "      internals " << hexAddress(nb.address) << " in the " << nb.dictName << " of interpreter " << hexAddress(nb.interpreter) << "\n";
        out << "      used by:";
        if (nb.modules.empty()) out << " (no loaded module's read-only data holds this ABI tag)";
        for (const auto& m : nb.modules) out << "\n        " << shown(m.path) << (m.confirmed ? "  (" + shown(m.how) + ")" : "");
        out << "\n";
        if (options.types) {
            out << "      registered types (" << nb.types.size() << "; layout: " << nb.layout << "):\n";
            for (const auto& t : nb.types) out << "        " << pad(shown(t.pythonName), 40) << shown(t.cppName) << "\n";
        }
    }
    out << "\n";
}

// Who made a thread state, said only where it is not the thread that runs it.
std::string madeByWords(const Report& report, const ThreadState& ts) {
    auto it = report.places.find(ts.address);
    if (it == report.places.end()) return "pthread " + hexAddress(ts.threadId);
    const TstatePlace& p = it->second;
    if (p.madeBeforeFork)
        return "made before a fork (thread_id " + hexAddress(ts.threadId) + " is the forking thread's; native_thread_id " +
               std::to_string(ts.nativeThreadId.value_or(0)) + " is no thread of this process)";
    if (p.madeBy && p.madeBy == p.lwp) return "pthread " + hexAddress(ts.threadId);
    if (p.madeBy) return "made by LWP " + std::to_string(*p.madeBy);
    if (!ts.threadId) return "made for no thread (pthread 0)";
    return "made by pthread " + hexAddress(ts.threadId) + " (no such thread)";
}

void renderRuntimes(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    bool frames = options.command != Command::Internals;
    for (const auto& rt : report.runtimes) {
        out << "CPython " << shown(rt.version) << (rt.layout.freeThreaded ? " (free-threaded build)" : "") << "  _PyRuntime "
            << hexAddress(rt.address) << " in " << shown(rt.modulePath) << "  (" << layoutWords(rt.layout.source)
            << (rt.layout.dwarfCached ? ", answered by pytstates' cache" : "") << ")\n";
        for (const auto& note : rt.notes) out << "  note: " << shown(note) << "\n";
        const GreenletScan* greenlets = frames ? report.greenletScanOf(rt) : nullptr;
        if (greenlets) renderGreenletModule(out, report, *greenlets, options.greenlets, options.width, options.frames);
        for (const auto& interp : rt.interpreters) {
            out << "  interpreter " << interp.id << (interp.main ? " (main)" : "") << " " << hexAddress(interp.address) << "  ";
            if (interp.gilDisabled) {
                out << "no GIL (free-threaded)";
            } else if (!interp.gilKnown) {
                out << "GIL: unknown";
            } else if (!interp.gilHolder) {
                out << "GIL: free";
            } else {
                auto lwp = report.gilHolderLwp(interp);
                out << "GIL held by " << hexAddress(interp.gilHolder) << (lwp ? " (LWP " + std::to_string(*lwp) + ")" : "");
                // The holder swapped in the state it runs after take_gil took the GIL with another.
                if (interp.gilTakenBy) out << ", taken with " << hexAddress(interp.gilTakenBy);
            }
            out << "  " << interp.tstates.size() << " thread state" << (interp.tstates.size() == 1 ? "" : "s") << "\n";
            if (!interp.note.empty()) out << "    note: " << shown(interp.note) << "\n";
            if (auto words = interpreterStateWords(report, interp); !words.empty()) out << "    " << words << "\n";
            for (const auto& ts : interp.tstates) {
                auto lwp = report.lwpFor(ts.address);
                auto place = report.places.find(ts.address);
                bool unknown = !lwp && place != report.places.end() && place->second.runnerUnknown;
                out << "    tstate " << hexAddress(ts.address) << "  id " << (ts.id ? std::to_string(*ts.id) : std::string("?")) << "  "
                    << (lwp ? "LWP " + std::to_string(*lwp) : unknown ? std::string("runs on a thread not found") : std::string("parked")) << "  "
                    << madeByWords(report, ts);
                // Without a GIL, whether each thread state is attached is what says who runs Python.
                if (rt.layout.freeThreaded && ts.state) out << "  " << threadStateWords(*ts.state);
                if (interp.gilKnown && interp.gilHolder == ts.address) out << "  [holds GIL]";
                out << tstateNameWords(report, ts.address) << "\n";
                if (!ts.note.empty()) out << "        note: " << shown(ts.note) << "\n";
                if (!frames) continue;
                if (ts.frames.empty()) out << "        (no Python frames)\n";
                renderFramesText(out, "        ", ts.frames, FrameLines::Numbered, options.width, options.frames);
                if (greenlets && lwp)
                    renderTstateGreenlets(out, *greenlets, *lwp, interp.address, options.greenlets, options.width, options.frames);
            }
        }
        out << "\n";
    }
    for (const auto& r : report.rejectedRuntimes) out << "not analysed: " << shown(r) << "\n";
}

std::string pointerCell(const Report& report, uint64_t value) {
    if (!value) return "-";
    return hexAddress(value) + (report.listed(value) ? "" : "!");
}

// The thread table's pointer columns, one row of cells per thread (a header row first).
struct ThreadTable {
    std::vector<std::string> header;
    std::vector<size_t> pads;  // each column's width on one wide line, as it has always been
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> tails;  // NATIVE and NAME, after the pointer columns
};

ThreadTable threadTable(const Report& report, const RenderOptions& options) {
    ThreadTable table;
    auto column = [&table](const std::string& name, size_t width) {
        table.header.push_back(name);
        table.pads.push_back(width);
    };
    if (options.showDebuggerThreads) column("THR", 5);
    column("LWP", 9);
    column("PTHREAD", 17);
    column("PYTHREADSTATE", 20);
    column("CURRENT", 17);
    std::string autotss = "AUTOTSS";
    for (const auto& t : report.threads) {
        if (t.autotssKey) autotss = "AUTOTSS(k" + std::to_string(*t.autotssKey) + ")";
        if (t.autotssThreadLocal) autotss = "GILSTATE(tls)";
    }
    column(autotss, 18);
    for (const auto& view : report.internals)
        if (view.record.tlsKey) column("PYBIND11(k" + std::to_string(*view.record.tlsKey) + ")", 18);
    auto runsOn = report.tstatesByLwp();
    static const std::vector<uint64_t> kNoRuns;
    for (const auto& t : report.threads) {
        // The state it runs now; "+N": N more run beneath it on the same stack (a state swapped in
        // inside another's call).
        auto on = runsOn.find(t.lwp);
        const auto& runs = on != runsOn.end() ? on->second : kNoRuns;
        std::string owned = runs.empty() ? "-" : hexAddress(runs.front());
        if (runs.size() > 1) owned += " +" + std::to_string(runs.size() - 1);
        std::vector<std::string> row;
        if (options.showDebuggerThreads) row.push_back(t.debuggerThread ? std::to_string(t.debuggerThread) : "-");
        row.push_back(std::to_string(t.lwp));
        row.push_back(hexAddress(t.pthread));
        row.push_back(owned);
        row.push_back(t.currentStatus.empty() ? pointerCell(report, t.currentTstate) : "n/a");
        row.push_back(pointerCell(report, t.autotssTstate));
        for (const auto& view : report.internals) {
            if (!view.record.tlsKey) continue;
            uint64_t value = 0;
            for (const auto& v : view.values)
                if (v.lwp == t.lwp) value = v.tstate;
            row.push_back(pointerCell(report, value));
        }
        table.rows.push_back(row);
        std::string tail = t.nativeFrames.empty() ? "?" : t.nativeFrames.front().function.empty() ? "??" : shown(shortFunction(t.nativeFrames.front().function));
        if (t.blockedOn && t.blockedOn->kind != WaitKind::None)
            tail += "  [" + shown(blockedOnWords(*t.blockedOn) + finalizingWaitWords(*t.blockedOn)) + "]";
        table.tails.push_back(tail + threadNameWords(report, t));
    }
    return table;
}

const char* const kThreadsLegend = "(PYTHREADSTATE: the thread state the thread runs, +N: N more beneath it; ! = names no listed thread state)";
const char* const kThreadsTail = "NATIVE (innermost frame), NAME (Python's Thread.name, or the kernel's comm)";

void renderThreads(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    ThreadTable table = threadTable(report, options);
    bool legend = !report.internals.empty() || !report.threads.empty();
    // One line per thread, as wide as it takes, where the terminal has the room (or is no terminal).
    size_t wide = 2;
    for (size_t pad : table.pads) wide += pad;
    size_t longestTail = displayWidth(kThreadsTail);
    for (const auto& tail : table.tails) longestTail = std::max(longestTail, displayWidth(tail));
    if (!options.width || wide + longestTail <= options.width) {
        out << "OS THREADS (" << report.threads.size() << ")" << (legend ? std::string("   ") + kThreadsLegend : "") << "\n  ";
        for (size_t c = 0; c < table.header.size(); ++c) out << pad(table.header[c], table.pads[c]);
        out << kThreadsTail << "\n";
        for (size_t r = 0; r < table.rows.size(); ++r) {
            out << "  ";
            for (size_t c = 0; c < table.rows[r].size(); ++c) out << pad(table.rows[r][c], table.pads[c]);
            out << table.tails[r] << "\n";
        }
        return;
    }
    // A narrow terminal: each column as wide as its widest cell, the columns on as many lines as
    // they need, then NATIVE and NAME on a line of their own (two lines per thread at 80 columns
    // for a table without pybind11 records).
    out << "OS THREADS (" << report.threads.size() << ")\n";
    if (legend) out << wrapText(kThreadsLegend, options.width, "  ");
    std::vector<size_t> widths(table.header.size());
    for (size_t c = 0; c < widths.size(); ++c) {
        widths[c] = table.header[c].size();
        for (const auto& row : table.rows) widths[c] = std::max(widths[c], row[c].size());
        widths[c] += 2;
    }
    std::vector<size_t> breaks;  // the columns that start a line after the first
    size_t used = 2;
    for (size_t c = 0; c < widths.size(); ++c) {
        if (c && used + widths[c] - 2 > options.width) {
            breaks.push_back(c);
            used = 6;
        }
        used += widths[c];
    }
    auto line = [&](const std::vector<std::string>& cells, const std::string& tail) {
        out << "  ";
        for (size_t c = 0; c < cells.size(); ++c) {
            if (std::find(breaks.begin(), breaks.end(), c) != breaks.end()) out << "\n      ";
            out << pad(cells[c], widths[c]);
        }
        out << "\n      " << tail << "\n";
    };
    line(table.header, "NATIVE (innermost frame), NAME (Thread.name, or the kernel's comm)");
    for (size_t r = 0; r < table.rows.size(); ++r) line(table.rows[r], table.tails[r]);
}

// One line when files were not simply read at the paths the target names: the process's own
// view of them (/proc/PID/map_files, /proc/PID/root), files deleted or replaced since they were
// mapped, files fetched from debuginfod.
void renderFileSources(std::ostringstream& out, const Report& report) {
    std::map<std::string, int> byVia;
    std::vector<std::string> deleted;
    for (const auto& f : report.target.files) {
        if (!f.via.empty()) ++byVia[f.via];
        if (f.deleted) deleted.push_back(f.module);
    }
    std::string pid = std::to_string(report.target.pid);
    // With a sysroot, a file read at its own path instead is worth saying: it is this machine's.
    bool outsideSysroot = !report.target.sysroot.empty() && byVia.count("path");
    bool plain = deleted.empty() && !outsideSysroot && byVia.size() <= 1 && (byVia.empty() || byVia.count("map_files") || byVia.count("path"));
    if (plain) return;
    static const std::pair<const char*, const char*> kWords[] = {
        {"map_files", "/proc/PID/map_files"}, {"root", "/proc/PID/root"}, {"sysroot", "the sysroot"},
        {"path", "their own paths"}, {"debuginfod", "debuginfod"}};
    std::string line;
    for (const auto& [via, words] : kWords) {
        auto it = byVia.find(via);
        if (it == byVia.end()) continue;
        std::string where = words;
        auto at = where.find("PID");
        if (at != std::string::npos) where.replace(at, 3, pid);
        line += (line.empty() ? "" : ", ") + std::to_string(it->second) + " through " + where;
        if (outsideSysroot && std::string(via) == "path") line += " (not under the sysroot; verified by build-id where the target holds one)";
    }
    out << "files: " << line;
    if (!deleted.empty()) {
        out << "; deleted or replaced on disk since the process mapped them:";
        for (const auto& d : deleted) out << " " << shown(d);
    }
    out << "\n";
}

}  // namespace

std::string renderText(const Report& report, const RenderOptions& options) {
    std::ostringstream out;
    out << (report.target.kind == TargetKind::Live ? "process " : "core of pid ") << report.target.pid;
    const auto& ns = report.target.namespacePids;
    std::vector<std::string> where;
    if (ns.size() > 1) where.push_back("pid " + std::to_string(ns.back()) + " in its own PID namespace");
    if (report.target.root != "/") where.push_back("its root is " + shown(report.target.root));
    for (size_t i = 0; i < where.size(); ++i) out << (i ? "; " : " (") << where[i] << (i + 1 == where.size() ? ")" : "");
    out << "  " << shown(report.target.executable) << "  " << plural(report.threads.size(), "thread");
    if (report.target.stoppedMs) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "  (stopped %.1f ms)", *report.target.stoppedMs);
        out << buf;
    }
    out << "\n";
    // A core of a process that runs no Python: what process it was (NT_PRPSINFO).
    if (!report.noRuntime.empty() && report.target.process)
        out << "  command: " << shown(report.target.process->arguments) << "  (parent pid " << report.target.process->ppid << ", uid "
            << report.target.process->uid << ")\n";
    renderFileSources(out, report);
    for (const auto& w : report.warnings) out << "warning: " << shown(w) << "\n";
    out << "\n";
    // The strongest fact first: a thread that faulted or aborted itself is not waiting, whatever
    // else hangs. A signal sent by another process (a watchdog's SIGABRT) found the threads where
    // they were: the hang it was sent for comes first.
    if (!report.noRuntime.empty()) {  // a core of a process without Python: its crash and threads
        if (report.crash) renderCrash(out, report, options);
        out << wrapText(shown(report.noRuntime) + (report.nativeStacks ? "" : " (--native: every thread's whole native stack)"),
                        options.width, "")
            << "\n";
        renderThreads(out, report, options);
        if (report.nativeStacks) renderNativeStacks(out, report, options);
        return foldLines(out.str() + summaryLine(report, options), options.width);
    }
    bool killed = report.crash && !report.crash->signal.raisedByThread(report.target.pid);
    if (report.crash && !killed) renderCrash(out, report, options);
    renderHang(out, report, options);
    renderTaskHang(out, report, options.color, options.width);
    bool tasksFirst = tasksStuck(report);  // a stuck task: the await tree before the thread states
    if (tasksFirst) renderTasksText(out, report, options.width, options.tasks);
    if (killed) renderCrash(out, report, options);
    if (options.command == Command::Check) renderFindings(out, report, options);
    renderRuntimes(out, report, options);
    if (options.command != Command::Tstates) {
        renderInternals(out, report, options);
        renderModuleLocals(out, report);
        renderNanobind(out, report, options);
    }
    if (!tasksFirst) renderTasksText(out, report, options.width, options.tasks);
    renderThreads(out, report, options);
    if (report.nativeStacks) renderNativeStacks(out, report, options);
    if (options.command != Command::Check && !report.findings.empty()) {
        out << "\n";
        renderFindings(out, report, options);
    }
    // The answer again, last: the first screen has scrolled away by now.
    std::string text = out.str();
    if (text.size() < 2 || text.compare(text.size() - 2, 2, "\n\n") != 0) text += "\n";
    return foldLines(text + summaryLine(report, options), options.width);
}

}  // namespace pytstates
