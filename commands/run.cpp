// SPDX-License-Identifier: Apache-2.0
#include "commands/run.h"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "commands/analysis/finding_codes.h"
#include "commands/history/history_words.h"
#include "commands/analysis/report.h"
#include "commands/options.h"
#include "commands/render/summary.h"
#include "commands/render/text_encoding.h"
#include "commands/version.h"

namespace pytstates {

namespace {

// Program counters of a history named for one report at most: each is a DWARF lookup (about a
// millisecond), and a saved history may hold any number of them.
constexpr size_t kMaxHistoryPcs = 1024;

// A history belongs to one process: a core or process with another pid gets a warning, not
// another process's events. Only the thread states the findings tell of are named.
void joinHistory(const Target& target, HistoryLog& history, Report& report, bool useDwarf) {
    if (history.pid && target.pid() && history.pid != target.pid()) {
        report.warnings.push_back("the history was recorded in process " + std::to_string(history.pid) + ", this is process " +
                                  std::to_string(target.pid()) + ": its events are not joined to the findings");
        return;
    }
    size_t unnamed = history.nameLastLives(target, historyTstates(report), useDwarf, kMaxHistoryPcs);
    if (unnamed)
        report.warnings.push_back("the history's frames name at most " + std::to_string(kMaxHistoryPcs) + " program counters: " +
                                  std::to_string(unnamed) + " more are given by address only");
    attachHistory(report, history);
}

}  // namespace

CommandResult runCommand(const Target& target, const CommandRequest& request, const std::function<int(int)>& debuggerThread) {
    CommandResult result;
    try {
        // What is read and found: facts-only options; what is shown of it: RenderOptions below.
        ReportOptions options;
        options.internals = request.command != Command::Tstates;
        options.types = request.types;
        options.findings = request.command == Command::Check;
        options.useDwarf = request.useDwarf;
        options.native = request.native;
        options.greenlets = request.command != Command::Internals;  // shown by tstates and check
        options.waits = request.waits && request.command != Command::Internals;
        options.asyncio = request.command != Command::Internals;  // tasks are found with or without --tasks
        options.afterConsistentReads = request.afterConsistentReads;
        options.locals = request.locals;
        std::shared_ptr<HistoryLog> history = request.history;
        if (!request.historyFile.empty()) history = HistoryLog::fromFile(request.historyFile);  // before the target is read
        Preparation preparation = prepareReport(target, options);
        if (request.beforeAnalysis) request.beforeAnalysis();
        Report report = buildReport(target, options, preparation);
        if (request.afterAnalysis) report.target.stoppedMs = request.afterAnalysis();
        target.readingFor("history");
        if (history && options.findings) joinHistory(target, *history, report, options.useDwarf);
        target.readingFor("");
        report.target.readAfterResume = target.readAfterResume();
        RenderOptions render;
        render.command = request.command;
        render.types = request.types;
        render.greenlets = request.greenlets;
        render.frames = static_cast<size_t>(std::max(0, request.frames));
        render.tasks = request.tasks;
        // Narrower than 40 columns, a line holds too little of a table to be read.
        render.width = request.width > 0 ? static_cast<size_t>(std::max(request.width, 40)) : 0;
        render.color = request.color && !request.json;
        if (debuggerThread) {
            render.showDebuggerThreads = true;
            for (auto& row : report.threads) row.debuggerThread = debuggerThread(row.lwp);
        }
        result.output = request.json ? renderJson(report, render) : renderText(report, render);
        result.status = reportExitStatus(report);
    } catch (const std::exception& e) {
        result.status = 2;
        result.error = shown(e.what());  // may name what the target holds: a front end prints it as it is
    } catch (...) {
        result.status = 2;
        result.error = "internal error";
    }
    return result;
}

std::string historyNotHere(Command command) {
    std::string codes;
    for (const auto& info : findingCodes())
        if (info.history) codes += (codes.empty() ? "" : ", ") + std::string(info.name);
    return std::string("--history is check's: ") + (command == Command::Internals ? "internals" : "tstates") +
           " gives none of the findings a history is told in (" + codes + ")";
}

std::string commandHelp(Command command) { return std::string(PYTSTATES_VERSION_STRING) + ". " + commandHelpText(command); }

std::string debuggerCommandName(Command command) {
    return command == Command::Tstates ? "py-tstates" : command == Command::Internals ? "pybind-internals" : "py-tstates-check";
}

std::string commandSyntax(Command command) { return debuggerCommandName(command) + " " + optionsSyntax(command); }

std::string commandHelpText(Command command) {
    std::string about;
    switch (command) {
        case Command::Tstates:
            about = "Show every CPython runtime, interpreter and PyThreadState of the process, with the OS thread each\n"
                    "belongs to, the GIL holder and top Python frames, then one row per OS thread.\n"
                    "Thread table columns: THR = the debugger's thread number (use it to switch threads), LWP = OS thread id,\n"
                    "PTHREAD = its struct pthread, PYTHREADSTATE = the thread states listed for it, CURRENT = CPython's current\n"
                    "thread state on that thread, AUTOTSS(kN) = PyGILState's TLS slot (pthread key N), PYBIND11(kN) = a pybind11\n"
                    "internals record's TLS slot, NATIVE = the thread's innermost native frame, then its name: name \"...\" =\n"
                    "Python's Thread.name, comm \"...\" = the kernel's. A value ending in '!' names no\n"
                    "listed thread state. Under each interpreter, its state: running or finalizing (and on which thread),\n"
                    "whether the GC is collecting (and on which thread). A core of a crashed process starts with CRASH: the\n"
                    "signal, the thread, its native stack and the finding the crash is, when a frame holds that finding's pointer.\n"
                    "With greenlet loaded, each thread state says how many greenlets its thread has and which one runs.\n"
                    "The last line repeats the answer: a CRASH, a HANG, the findings.\n";
            break;
        case Command::Internals:
            about = "Show every pybind11 internals record in every interpreter: its ID, the modules that use it, its\n"
                    "thread-state TLS key and the value each thread holds under it.\n";
            break;
        case Command::Check:
            about = "Everything py-tstates and pybind-internals show, preceded by the findings: stale, foreign, shared\n"
                    "or mismatched thread-state pointers per thread, an invalid GIL holder, orphaned thread states,\n"
                    "split pybind11 internals, suspended greenlets whose saved frame is not a frame or is on a live\n"
                    "stack. Each finding names the thread (LWP and the debugger's thread number), the pointer, its\n"
                    "source and the likely cause.\n"
                    "The last line repeats the answer: pytstates: CRASH SIGSEGV LWP n \xe2\x80\x94 stale-tstate (1 error); exit 1.\n";
            break;
    }
    return about + "Usage: " + commandSyntax(command) + "\n" + optionsHelp(command);
}

}  // namespace pytstates
