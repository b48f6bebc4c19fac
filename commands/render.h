// SPDX-License-Identifier: Apache-2.0
// Renders a Report for people (text) or programs (JSON, as docs/report.schema.json fixes it).
#pragma once

#include <string>

#include "commands/report.h"

namespace pytstates {

enum class Command { Tstates, Internals, Check };

struct RenderOptions {
    Command command = Command::Tstates;
    bool showDebuggerThreads = false;  // a column with the debugger's thread numbers
    bool types = false;                // list each internals record's registered types
    bool greenlets = false;            // every greenlet with its frames (default: counts, the running one)
};

std::string renderJson(const Report& report, const RenderOptions& options);
std::string renderText(const Report& report, const RenderOptions& options);

}  // namespace pytstates
