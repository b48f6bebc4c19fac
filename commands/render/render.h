// SPDX-License-Identifier: Apache-2.0
// Renders a Report for people (text) or programs (JSON, as docs/report.schema.json fixes it).
#pragma once

#include <string>

#include "commands/analysis/report.h"

namespace pytstates {

enum class Command { Tstates, Internals, Check };

struct RenderOptions {
    Command command = Command::Tstates;
    bool showDebuggerThreads = false;  // a column with the debugger's thread numbers
    bool types = false;                // list each internals record's registered types
    bool greenlets = false;            // every greenlet with its frames (default: counts, the running one)
    // --frames N: the first N Python frames of each thread state's and greenlet's stack (text and
    // JSON), and how many are left out; the analyses read them whole.
    size_t frames = 5;
    bool tasks = false;                // --tasks: the text's await tree (JSON has the loops and tasks always)
    // Text: the terminal's columns (the front end's to know: TIOCGWINSZ, COLUMNS, gdb's width);
    // 0: unwrapped, one logical line per line (a pipe, a log). JSON ignores it and color.
    size_t width = 0;
    bool color = false;  // CRASH, HANG, error and warning in colour (a terminal that shows it)
};

std::string renderJson(const Report& report, const RenderOptions& options);
std::string renderText(const Report& report, const RenderOptions& options);

}  // namespace pytstates
