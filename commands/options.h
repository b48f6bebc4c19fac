// SPDX-License-Identifier: Apache-2.0
// The report's options in one table: the CLI's parser (CLI11) and --help, the debuggers' argument
// parser (parseCommandArguments) and gdb's and lldb's help all read it, so that an option is
// spelled, checked and described the same everywhere (docs/usage.md, docs/frontends.md).
// The CLI's target options (--core, --pid, --exe, ...) are the CLI's alone: plugin/engine/cli_main.cpp.
#pragma once

#include <string>
#include <vector>

#include "commands/render/render.h"

namespace pytstates {

struct CommandRequest;

struct ReportOption {
    const char* shortName;  // "-f"; "" when none
    const char* longName;   // "--frames"
    const char* value;      // what it takes ("N", "WHEN", "FILE"); "" for a flag
    unsigned commands;      // the commands that take it: a mask of commandBit()
    const char* help;       // one line: what it does
    const char* checkHelp;  // check's own line where it says more there; "" when the same
    // Sets the option on *request from its value ("" for a flag); false and *error (one line) on
    // a value it refuses.
    bool (*apply)(const std::string& value, CommandRequest* request, std::string* error);
};

constexpr unsigned commandBit(Command command) { return 1u << static_cast<unsigned>(command); }

// Every report option, in the order help lists them.
const std::vector<ReportOption>& reportOptions();

// The option's description for this command.
const char* optionHelp(const ReportOption& option, Command command);

// "[-j|--json] [-f|--frames N] ...": what the command takes, for a usage line.
std::string optionsSyntax(Command command);

// One line per option the command takes ("  -f, --frames N   Python frames shown per thread state
// (default 5)"), for gdb's and lldb's help.
std::string optionsHelp(Command command);

// --frames' and --width's values: a whole number from 0 to max, digits only; false otherwise.
bool parseCount(const std::string& text, int max, int* out);

}  // namespace pytstates
