// SPDX-License-Identifier: Apache-2.0
#include "commands/render/summary.h"

#include <map>
#include <vector>

#include "commands/analysis/finding_codes.h"
#include "commands/render/text_layout.h"
#include "symbols/core/signal_names.h"

namespace pytstates {

namespace {

bool isHang(const Finding& f) { return findingInfo(f.code).hang; }

std::string abortWords(const AbortInfo& a) {
    if (a.kind == "uncaught-exception") return "uncaught exception";
    if (a.kind == "assert") return "assertion failed";
    if (a.kind == "fatal-error") return "Fatal Python error";
    return "abort";
}

std::string hangWords(const Finding& f) {
    switch (f.code) {
        case FindingCode::Deadlock:
            if (!f.taskCycle.empty()) return "deadlock, " + std::to_string(f.taskCycle.size()) + " asyncio tasks";
            return "deadlock, " + std::to_string(f.cycle.size()) + (f.cycle.size() == 1 ? " thread" : " threads");
        case FindingCode::GilHeldWhileBlocked: return "the GIL's holder is blocked";
        case FindingCode::StopTheWorldBlocked: return "a stop of the world waits for a blocked thread";
        case FindingCode::EventLoopBlocked: return "an event loop is blocked";
        default: return findingName(f.code);
    }
}

}  // namespace

int reportExitStatus(const Report& report) {
    if (report.crash || report.hasError()) return 1;
    for (const auto& f : report.findings)
        if (isHang(f)) return 1;
    return 0;
}

std::string summaryLine(const Report& report, const RenderOptions& options) {
    bool color = options.color;
    std::string head;  // what happened to the target: a crash, a hang
    if (report.crash) {
        const CrashSignal& s = report.crash->signal;
        head = paint("CRASH", Paint::Crash, color) + " " + signalName(s.signal) + " LWP " + std::to_string(s.lwp);
        if (report.crash->abort) head += " (" + abortWords(*report.crash->abort) + ")";
    }
    if (!report.noRuntime.empty()) head += (head.empty() ? "" : "; ") + std::string("no CPython runtime");
    std::vector<const Finding*> hangs;
    for (const auto& f : report.findings)
        if (isHang(f)) hangs.push_back(&f);
    if (!hangs.empty()) {
        head += (head.empty() ? "" : "; ") + paint("HANG", Paint::Hang, color) + " " + hangWords(*hangs.front());
        if (hangs.size() > 1) head += " (+" + std::to_string(hangs.size() - 1) + " more)";
    }
    // The findings: the codes of the gravest severity not already told as a hang, then the counts.
    std::map<Severity, size_t> count;
    for (const auto& f : report.findings) ++count[findingSeverity(f.code)];
    std::vector<std::string> names;
    for (Severity s : {Severity::Error, Severity::Warning, Severity::Info}) {
        for (const auto& f : report.findings) {
            if (isHang(f) || findingSeverity(f.code) != s) continue;
            std::string name = findingName(f.code);
            bool seen = false;
            for (const auto& n : names) seen = seen || n == name;
            if (!seen) names.push_back(name);
        }
        if (!names.empty()) break;
    }
    std::string counts;
    if (count[Severity::Error]) counts += paint(plural(count[Severity::Error], "error"), Paint::Error, color);
    if (count[Severity::Warning]) counts += (counts.empty() ? "" : ", ") + paint(plural(count[Severity::Warning], "warning"), Paint::Warning, color);
    if (count[Severity::Info]) counts += (counts.empty() ? "" : ", ") + std::to_string(count[Severity::Info]) + " info";
    std::string tail = "; exit " + std::to_string(reportExitStatus(report)) + "\n";

    auto compose = [&](size_t shownNames) {
        std::string findings;
        for (size_t i = 0; i < names.size() && i < shownNames; ++i) findings += (i ? ", " : "") + names[i];
        if (names.size() > shownNames) findings += (shownNames ? ", +" : "+") + std::to_string(names.size() - shownNames) + " more";
        if (!counts.empty()) findings += (findings.empty() ? "(" : " (") + counts + ")";
        std::string body = head;
        if (!findings.empty()) body += (body.empty() ? "" : " \xe2\x80\x94 ") + findings;  // an em dash
        else if (options.command == Command::Check) body += (body.empty() ? "" : " \xe2\x80\x94 ") + std::string("no findings");
        if (body.empty() && options.command == Command::Internals) body = plural(report.internals.size(), "pybind11 internals record");
        if (body.empty()) {
            size_t tstates = 0;
            for (const auto& rt : report.runtimes)
                for (const auto& interp : rt.interpreters) tstates += interp.tstates.size();
            body = plural(report.threads.size(), "thread") + ", " + plural(tstates, "thread state") + ", no crash";
        }
        return "pytstates: " + body + tail;
    };
    // Fewer codes named (one at least) when the line is wider than the terminal; the counts say the rest.
    size_t shownNames = names.size();
    std::string line = compose(shownNames);
    while (options.width && shownNames > 1 && displayWidth(line) > options.width + 1) line = compose(--shownNames);
    return line;
}

}  // namespace pytstates
