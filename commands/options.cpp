// SPDX-License-Identifier: Apache-2.0
#include "commands/options.h"

#include <algorithm>

#include "commands/run.h"

namespace pytstates {

namespace {

constexpr unsigned kTstates = commandBit(Command::Tstates);
constexpr unsigned kInternals = commandBit(Command::Internals);
constexpr unsigned kCheck = commandBit(Command::Check);
constexpr unsigned kAll = kTstates | kInternals | kCheck;
constexpr int kMaxCount = 100000;

const char* commandName(Command command) {
    return command == Command::Tstates ? "tstates" : command == Command::Internals ? "internals" : "check";
}

std::string spelled(const ReportOption& o) {
    std::string s = *o.shortName ? std::string(o.shortName) + "/" + o.longName : std::string(o.longName);
    return *o.value ? s + " " + o.value : s;
}

const std::vector<ReportOption> kOptions = {
    {"-j", "--json", "", kAll, "one JSON object (docs/report.schema.json); the CLI writes an error as {\"error\": {\"message\": ...}} too", "",
     [](const std::string&, CommandRequest* r, std::string*) { return r->json = true; }},
    {"-f", "--frames", "N", kTstates | kCheck,
     "Python frames shown per thread state (default 5; 0: none); every stack is read whole, the text says how many it left out", "",
     [](const std::string& v, CommandRequest* r, std::string* error) {
         if (parseCount(v, kMaxCount, &r->frames)) return true;
         *error = "--frames needs a number of frames, 0 or more, got '" + v + "'";
         return false;
     }},
    {"-t", "--types", "", kInternals, "each internals record's registered types: Python name and C++ name", "",
     [](const std::string&, CommandRequest* r, std::string*) { return r->types = true; }},
    {"-n", "--native", "", kTstates | kCheck, "every thread's whole native stack, the Python frames each eval-loop frame runs under it", "",
     [](const std::string&, CommandRequest* r, std::string*) { return r->native = true; }},
    {"-g", "--greenlets", "", kTstates | kCheck, "every greenlet of every thread: its state, parent and the frames a suspended one saved", "",
     [](const std::string&, CommandRequest* r, std::string*) { return r->greenlets = true; }},
    {"", "--locals", "", kTstates | kCheck, "each Python frame's arguments and locals under it (as Python's repr() prints them, bounded)", "",
     [](const std::string&, CommandRequest* r, std::string*) { return r->locals = true; }},
    {"", "--tasks", "", kTstates | kCheck,
     "every asyncio event loop and task as an await tree: each task's name, state, coroutine frames and what it awaits (CPython 3.9-3.15)",
     "every asyncio event loop and task shown as an await tree (as tstates --tasks); the tasks are read and their findings "
     "(task deadlocks, event-loop-blocked) given without it too",
     [](const std::string&, CommandRequest* r, std::string*) { return r->tasks = true; }},
    {"", "--no-waits", "", kTstates | kCheck, "skip what each thread waits for (threads[].blocked_on)",
     "skip what each thread waits for: no deadlock, gil-held-while-blocked or stop-the-world-blocked finding",
     [](const std::string&, CommandRequest* r, std::string*) {
         r->waits = false;
         return true;
     }},
    {"", "--history", "FILE", kCheck,
     "a thread-state history saved by py-tstates-record save: each stale, foreign or shared thread state and invalid GIL holder is "
     "told who created, cached and deleted it",
     "",
     [](const std::string& v, CommandRequest* r, std::string* error) {
         if (r->command != Command::Check) {
             *error = historyNotHere(r->command);
             return false;
         }
         r->historyFile = v;
         return true;
     }},
    {"", "--width", "N",  kAll,
     "wrap the text to N columns (0: unwrapped; default: the CLI's COLUMNS or terminal, gdb's `set width`, lldb's term-width on a "
     "terminal); a frame's file path is cut at the front only to fit",
     "",
     [](const std::string& v, CommandRequest* r, std::string* error) {
         if (parseCount(v, kMaxCount, &r->width)) return true;
         *error = "--width needs a number of columns (0: unwrapped), got '" + v + "'";
         return false;
     }},
    {"", "--color", "WHEN", kAll,
     "CRASH, HANG, error and warning in colour: auto (the CLI: stdout a terminal and NO_COLOR unset; a debugger: never), always, "
     "never; never in --json",
     "",
     [](const std::string& v, CommandRequest* r, std::string* error) {
         if (v != "always" && v != "never" && v != "auto") {
             *error = "--color needs auto, always or never, got '" + v + "'";
             return false;
         }
         r->color = v == "always";  // auto is the front end's to decide (the CLI's own parser does)
         return true;
     }},
};

const ReportOption* optionNamed(const std::string& name) {
    for (const auto& o : kOptions)
        if (name == o.longName || (*o.shortName && name == o.shortName)) return &o;
    return nullptr;
}

std::string expected(Command command) {
    std::string list;
    for (const auto& o : kOptions)
        if (o.commands & commandBit(command)) list += (list.empty() ? "" : ", ") + spelled(o);
    return list;
}

}  // namespace

const std::vector<ReportOption>& reportOptions() { return kOptions; }

const char* optionHelp(const ReportOption& option, Command command) {
    return command == Command::Check && *option.checkHelp ? option.checkHelp : option.help;
}

bool parseCount(const std::string& text, int max, int* out) {
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
    int n = std::stoi(text);
    if (n > max) return false;
    *out = n;
    return true;
}

std::string optionsSyntax(Command command) {
    std::string s;
    for (const auto& o : kOptions) {
        if (!(o.commands & commandBit(command))) continue;
        std::string names = *o.shortName ? std::string(o.shortName) + "|" + o.longName : std::string(o.longName);
        s += (s.empty() ? "[" : " [") + names + (*o.value ? std::string(" ") + o.value : "") + "]";
    }
    return s;
}

std::string optionsHelp(Command command) {
    std::string out;
    for (const auto& o : kOptions) {
        if (!(o.commands & commandBit(command))) continue;
        std::string names = *o.shortName ? std::string(o.shortName) + ", " + o.longName : std::string("    ") + o.longName;
        if (*o.value) names += std::string(" ") + o.value;
        out += "  " + names + std::string(names.size() < 20 ? 20 - names.size() : 1, ' ') + optionHelp(o, command) + "\n";
    }
    return out;
}

bool parseCommandArguments(const std::vector<std::string>& args, CommandRequest* request, std::string* error) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        // --name=value as well as --name value.
        size_t eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
        std::string name = eq == std::string::npos ? a : a.substr(0, eq);
        const ReportOption* o = optionNamed(name);
        if (!o || !(o->commands & commandBit(request->command))) {
            if (o && std::string(o->longName) == "--history") {
                *error = historyNotHere(request->command);
            } else if (o) {
                *error = "'" + a + "' is not an option of " + commandName(request->command) + " (its options: " +
                         expected(request->command) + ")";
            } else {
                *error = "unknown argument '" + a + "' (expected " + expected(request->command) + ")";
            }
            return false;
        }
        std::string value;
        if (*o->value) {
            if (eq != std::string::npos) {
                value = a.substr(eq + 1);
            } else if (i + 1 < args.size()) {
                value = args[++i];
            } else {
                *error = std::string(o->longName) + " needs " + o->value + (std::string(o->value) == "FILE" && request->command == Command::Check
                                                                                ? " (a history saved by py-tstates-record save)"
                                                                                : "");
                return false;
            }
        } else if (eq != std::string::npos) {
            *error = std::string(o->longName) + " takes no value, got '" + a + "'";
            return false;
        }
        if (!o->apply(value, request, error)) return false;
    }
    return true;
}

}  // namespace pytstates
