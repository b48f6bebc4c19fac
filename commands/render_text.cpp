// The one-screen text view: runtimes, interpreters and thread states with their stacks, then one
// row per OS thread with every per-thread pointer side by side.
#include <cstdio>
#include <sstream>

#include "commands/render.h"

namespace pytstates {

namespace {

std::string basename(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string pad(const std::string& s, size_t width) { return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' '); }

std::string layoutWords(const std::string& source) {
    if (source == "dwarf") return "layout from DWARF";
    if (source == "debug_offsets") return "layout from _Py_DebugOffsets";
    return "built-in layout table";
}

void renderFindings(std::ostringstream& out, const Report& report) {
    if (report.findings.empty()) {
        out << "No findings.\n\n";
        return;
    }
    out << "FINDINGS\n";
    for (const auto& f : report.findings) {
        out << "  " << pad(f.severity, 8) << pad(f.code, 26);
        if (f.lwp) out << "LWP " << *f.lwp << "  ";
        out << f.message << "\n";
    }
    out << "\n";
}

void renderRuntimes(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    bool frames = options.command != Command::Internals;
    for (const auto& rt : report.runtimes) {
        out << "CPython " << rt.version << "  _PyRuntime " << hexAddress(rt.address) << " in " << rt.modulePath << "  ("
            << layoutWords(rt.layout.source) << ")\n";
        for (const auto& note : rt.notes) out << "  note: " << note << "\n";
        for (const auto& interp : rt.interpreters) {
            out << "  interpreter " << interp.id << (interp.main ? " (main)" : "") << " " << hexAddress(interp.address) << "  ";
            if (!interp.gilKnown) {
                out << "GIL: unknown";
            } else if (!interp.gilHolder) {
                out << "GIL: free";
            } else {
                auto lwp = report.lwpFor(interp.gilHolder);
                out << "GIL held by " << hexAddress(interp.gilHolder) << (lwp ? " (LWP " + std::to_string(*lwp) + ")" : "");
            }
            out << "  " << interp.tstates.size() << " thread state" << (interp.tstates.size() == 1 ? "" : "s") << "\n";
            if (!interp.note.empty()) out << "    note: " << interp.note << "\n";
            for (const auto& ts : interp.tstates) {
                auto lwp = report.lwpFor(ts.address);
                out << "    tstate " << hexAddress(ts.address) << "  id " << ts.id << "  LWP "
                    << (lwp ? std::to_string(*lwp) : std::string("-")) << "  pthread " << hexAddress(ts.threadId);
                if (!lwp) out << " (no such thread)";
                if (interp.gilKnown && interp.gilHolder == ts.address) out << "  [holds GIL]";
                out << "\n";
                if (!ts.note.empty()) out << "        note: " << ts.note << "\n";
                if (!frames) continue;
                if (ts.frames.empty()) out << "        (no Python frames)\n";
                for (size_t i = 0; i < ts.frames.size(); ++i) {
                    const auto& f = ts.frames[i];
                    out << "        #" << i << " " << f.function << " (" << basename(f.file) << ":" << f.line << ")\n";
                }
            }
        }
        out << "\n";
    }
    for (const auto& r : report.rejectedRuntimes) out << "not analysed: " << r << "\n";
}

void renderThreads(std::ostringstream& out, const Report& report, const RenderOptions& options) {
    out << "OS THREADS (" << report.threads.size() << ")\n  ";
    if (options.showDebuggerThreads) out << pad("THR", 5);
    out << pad("LWP", 9) << pad("PTHREAD", 17) << pad("PYTHREADSTATE", 17) << pad("CURRENT", 17) << "AUTOTSS\n";
    for (const auto& t : report.threads) {
        std::string owned = "-";
        for (const auto& [tstate, lwp] : report.lwpOfTstate)
            if (lwp == t.lwp) owned = owned == "-" ? hexAddress(tstate) : owned + "+";
        out << "  ";
        if (options.showDebuggerThreads) out << pad(t.debuggerThread ? std::to_string(t.debuggerThread) : "-", 5);
        out << pad(std::to_string(t.lwp), 9) << pad(hexAddress(t.pthread), 17) << pad(owned, 17)
            << pad(t.currentTstate ? hexAddress(t.currentTstate) : "-", 17);
        if (t.autotssTstate)
            out << hexAddress(t.autotssTstate) << (t.autotssStatus == "set" ? "" : " (" + t.autotssStatus + ")");
        else
            out << "-";
        out << "\n";
    }
}

}  // namespace

std::string renderText(const Report& report, const RenderOptions& options) {
    std::ostringstream out;
    out << (report.target.kind == TargetKind::Live ? "process " : "core of pid ") << report.target.pid << "  "
        << report.target.executable << "  " << report.threads.size() << " threads";
    if (report.target.stoppedMs) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "  (stopped %.1f ms)", *report.target.stoppedMs);
        out << buf;
    }
    out << "\n";
    for (const auto& w : report.warnings) out << "warning: " << w << "\n";
    out << "\n";
    if (options.command == Command::Check) renderFindings(out, report);
    renderRuntimes(out, report, options);
    renderThreads(out, report, options);
    if (options.command != Command::Check && !report.findings.empty()) {
        out << "\n";
        renderFindings(out, report);
    }
    return out.str();
}

}  // namespace pytstates
