// SPDX-License-Identifier: Apache-2.0
// One entry point for every front end: run tstates / internals / check on a target and get
// the rendered output and the exit status (docs/usage.md). Never throws.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands/history/history_log.h"
#include "commands/render/render.h"
#include "symbols/target.h"

namespace pytstates {

struct CommandRequest {
    Command command = Command::Tstates;
    bool json = false;
    bool types = false;
    int frames = 5;
    bool useDwarf = true;
    bool native = false;  // every thread's whole native stack
    bool greenlets = false;  // every greenlet with its frames
    bool tasks = false;      // every asyncio event loop and task (--tasks)
    bool locals = false;     // --locals: each Python frame's arguments and locals
    int width = 0;        // --width N: text wrapped to N columns; 0: unwrapped (RenderOptions::width)
    bool color = false;   // --color always: CRASH, HANG, error, warning in colour (never in JSON)
    bool waits = true;       // what each thread waits for, deadlock, gil-held-while-blocked, stop-the-world-blocked (--no-waits)
    // A recorded thread-state history (py-tstates-record, --history FILE): check joins it to
    // the findings about one thread state.
    std::shared_ptr<HistoryLog> history;
    // --history FILE (check only): a history saved by py-tstates-record save, read by runCommand;
    // it takes the place of `history` (a debugger's own recording).
    std::string historyFile;
    // Called after the file-only preparation, right before the analysis reads the target's
    // memory (a live target stops here).
    std::function<void()> beforeAnalysis;
    // Called once the analysis has read what must be one moment's (ReportOptions::
    // afterConsistentReads): a live target resumes here, the rest read from its copy or said so.
    std::function<void()> afterConsistentReads;
    // Called after the analysis has read the target and before rendering; what it returns is
    // shown as the time the target was stopped (a live target resumes here).
    std::function<std::optional<double>()> afterAnalysis;
};

struct CommandResult {
    int status = 2;      // 0, 1 (a crash, an abort, a hang or an error finding: reportExitStatus), 2 (could not analyse)
    std::string output;  // text or JSON; empty when status is 2
    std::string error;   // one line when status is 2
};

// debuggerThread(lwp) gives the debugger's own thread number (0 when none); may be empty.
CommandResult runCommand(const Target& target, const CommandRequest& request,
                         const std::function<int(int)>& debuggerThread = nullptr);

// Parses a debugger command's arguments ("--json --frames 3", check's "--history FILE", "--width N"
// and "--color always|never", which a front end may put first from its own settings) for
// request->command, set before, by the option table (commands/options.cpp); false and *error (one
// line) on an argument that command does not take or a value the option refuses. The CLI's
// report options go through it too.
bool parseCommandArguments(const std::vector<std::string>& args, CommandRequest* request, std::string* error);

// Why --history is refused by tstates and internals (one line).
std::string historyNotHere(Command command);

// What `help py-tstates` says about each command: pytstates' version, then commandHelpText (its
// usage line and options from the option table, commands/options.h).
std::string commandHelp(Command command);
std::string commandHelpText(Command command);
// "py-tstates [-j|--json] [-f|--frames N] ...": the debugger command's usage line.
std::string commandSyntax(Command command);
// The debugger command's name: py-tstates, pybind-internals, py-tstates-check.
std::string debuggerCommandName(Command command);

}  // namespace pytstates
