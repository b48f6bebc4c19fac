// SPDX-License-Identifier: Apache-2.0
// The pytstates command line (docs/usage.md): tstates | internals | check, on a core or a process.
// In libpytstates.so.0 as pytstates_main, so that bin/pytstates is one call into the library
// every front end shares.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "plugin/engine/pytstates.h"
#include "commands/render/json_writer.h"
#include "commands/render/render.h"
#include "commands/options.h"
#include "commands/run.h"
#include "commands/render/text_encoding.h"
#include "commands/version.h"
#include "plugin/cli/terminal.h"
#include "symbols/core/core_target.h"
#include "symbols/elf/type_cache.h"
#include "symbols/progress.h"
#include "symbols/live/live_target.h"

namespace {

// PYTSTATES_STATS=1: one line on stderr with what the analysis read (scripts/bench uses it).
void printReadStats(const pytstates::Target& target) {
    if (!std::getenv("PYTSTATES_STATS")) return;
    auto stats = target.readStats();
    std::fprintf(stderr, "pytstates-stats: %zu reads, %zu bytes, %zu threads, %zu modules\n", stats.calls, stats.bytes,
                 target.threads().size(), target.modules().size());
}

struct Arguments {
    std::string target;  // the positional TARGET: a core file, or a pid (digits)
    std::string core, exe, sysroot;
    std::vector<std::string> debugDirs;
    int pid = 0;
    bool noStop = false;
    bool noDwarf = false;
    bool offline = false;
    bool noCache = false;
    std::string maxDecoded;  // --max-decoded SIZE
    // The report's options as typed, for parseCommandArguments (commands/options.h: the table the
    // debuggers' commands read too).
    std::vector<std::string> report;
    bool width = false;          // --width given; else COLUMNS or the terminal's (plugin/cli/terminal.h)
    std::string color = "auto";  // --color auto|always|never
};

// The progress line: shown on a terminal only, once a run has taken a second
// (PYTSTATES_PROGRESS_AFTER_MS), overwritten in place and cleared before anything else is written.
struct TerminalProgress {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    std::chrono::milliseconds after{1000};
    bool shown = false;

    void install() {
        if (!isatty(STDERR_FILENO)) return;
        if (const char* ms = std::getenv("PYTSTATES_PROGRESS_AFTER_MS")) after = std::chrono::milliseconds(std::atol(ms));
        pytstates::setProgressSink([this](const std::string& line) {
            if (std::chrono::steady_clock::now() - start < after) return;
            std::string safe = pytstates::shown(line);
            std::string shownLine = safe.size() > 100 ? safe.substr(0, 97) + "..." : safe;
            std::fprintf(stderr, "\r%s\033[K", shownLine.c_str());
            std::fflush(stderr);
            shown = true;
        });
    }
    void clear() {
        if (!shown) return;
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
        shown = false;
    }
};
TerminalProgress progressLine;

// Lines name files a target named: shown as text is (text_encoding.h), never as bytes a terminal obeys.
void tellStderr(const std::string& line) {
    progressLine.clear();
    std::fprintf(stderr, "%s\n", pytstates::shown(line).c_str());
}

void addTargetOptions(CLI::App* cmd, Arguments& a) {
    // pystack's habit: the target as the one argument, a core file or a pid (checked in run()).
    cmd->add_option("target", a.target, "a core file (kernel, gcore, systemd-coredump; gzip, zstd, lz4, xz too), or a pid");
    auto* core = cmd->add_option("-c,--core", a.core, "an ELF core file (kernel, gcore, systemd-coredump; gzip, zstd, lz4, xz too)");
    cmd->add_option("-e,--exe", a.exe, "the executable, when the core's is elsewhere (moved, rebuilt, another machine)");
    cmd->add_option("--sysroot", a.sysroot, "find the core's files under this directory");
    cmd->add_option("--debug-dir", a.debugDirs, "more roots holding .build-id/xx/yyyy.debug files");
    auto* pid = cmd->add_option("-p,--pid", a.pid, "a live process, attached read-only");
    core->excludes(pid);
    cmd->add_flag("--no-stop", a.noStop, "read a live process without stopping it (the snapshot may be inconsistent)");
    cmd->add_flag("--no-dwarf", a.noDwarf, "ignore DWARF and debug files: layouts from _Py_DebugOffsets and built-in tables only");
    cmd->add_flag("--offline", a.offline, "never fetch files from debuginfod (DEBUGINFOD_URLS)");
    cmd->add_flag("--no-cache", a.noCache, "neither read nor write the layouts cached per build-id (also PYTSTATES_NO_CACHE=1)");
    cmd->add_option("--max-decoded", a.maxDecoded, "the most a compressed core may decode to (16G, 500M; default: the space free in $TMPDIR)");
}

// The report's options from the table the debuggers read (commands/options.h), each kept as typed
// for parseCommandArguments, which checks them as it does a debugger's. Another command's options
// are taken too, hidden from --help, so that the line refusing them is the one a debugger gives
// (`pytstates tstates --history FILE` says why --history is check's).
void addReportOptions(CLI::App* cmd, pytstates::Command command, Arguments& a) {
    for (const auto& o : pytstates::reportOptions()) {
        std::string names = *o.shortName ? std::string(o.shortName) + "," + o.longName : std::string(o.longName);
        bool mine = o.commands & pytstates::commandBit(command);
        std::string help = mine ? pytstates::optionHelp(o, command) : "";
        std::string longName = o.longName;
        CLI::Option* option;
        if (*o.value) {
            option = cmd->add_option_function<std::string>(names, [&a, longName](const std::string& v) {
                a.report.push_back(longName);
                a.report.push_back(v);
                if (longName == "--width") a.width = true;
                if (longName == "--color") a.color = v;
            }, help);
            option->type_name(o.value);
        } else {
            option = cmd->add_flag_callback(names, [&a, longName] { a.report.push_back(longName); }, help);
        }
        if (!mine) option->group("");
    }
}

// Paths the user typed are relative to the working directory, like every tool's.
std::string absolute(const std::string& path) {
    if (path.empty()) return path;
    std::error_code ec;
    auto p = std::filesystem::absolute(path, ec);
    return ec ? path : p.lexically_normal().string();
}

// --max-decoded's SIZE: bytes, or a number with K, M, G or T (powers of 1024; "16G", "1.5T", "16GiB").
uint64_t parseSize(const std::string& text) {
    auto refuse = [&]() -> uint64_t {
        throw std::runtime_error("--max-decoded needs a size (bytes, or with K, M, G, T: 16G), got '" + text + "'");
    };
    size_t used = 0;
    double number = 0;
    try {
        number = std::stod(text, &used);
    } catch (const std::exception&) {
        refuse();
    }
    if (!(number > 0) || text.find_first_not_of("0123456789.") < used) refuse();  // no sign, exponent, hex, inf or nan
    std::string unit = text.substr(used);
    if (unit.size() > 1 && (unit.substr(1) == "iB" || unit.substr(1) == "B")) unit = unit.substr(0, 1);
    static const std::string units = "KMGT";
    double scale = 1;
    if (!unit.empty()) {
        size_t at = unit.size() == 1 ? units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])))) : std::string::npos;
        if (at == std::string::npos) refuse();
        for (size_t i = 0; i <= at; ++i) scale *= 1024;
    }
    double bytes = number * scale;
    if (bytes < 1 || bytes >= 18e18) refuse();
    return static_cast<uint64_t>(bytes);
}

// The command's output on stdout and its exit status; status 2 is an error, one line (main's).
int finish(const pytstates::Target& target, const pytstates::CommandResult& result) {
    progressLine.clear();
    printReadStats(target);
    if (result.status == 2) throw std::runtime_error(result.error);
    std::fwrite(result.output.data(), 1, result.output.size(), stdout);
    return result.status;
}

int run(pytstates::Command command, Arguments a) {
    using namespace pytstates;
    a.exe = absolute(a.exe);
    a.sysroot = absolute(a.sysroot);
    for (auto& d : a.debugDirs) d = absolute(d);
    if (a.noCache) disableTypeCache();
    if (!a.target.empty()) {  // TARGET: digits are a pid, anything else a core file
        if (!a.core.empty() || a.pid)
            throw std::runtime_error("two targets: " + a.target + " and " + (a.pid ? "--pid " + std::to_string(a.pid) : "--core " + a.core));
        bool digits = a.target.find_first_not_of("0123456789") == std::string::npos;
        if (digits && !std::filesystem::exists(a.target)) {
            try {
                a.pid = std::stoi(a.target);
            } catch (const std::exception&) {
                throw std::runtime_error(a.target + ": not a process id");
            }
        } else {
            a.core = absolute(a.target);
        }
    }
    if (a.core.empty() && !a.pid) throw std::runtime_error("no target: give a core file or a pid (pytstates check CORE, pytstates check -p PID)");
    // What only a core has, and what only a live process has.
    if (a.core.empty()) {
        if (!a.exe.empty()) throw std::runtime_error("--exe is for a core: a live process names its own executable");
        if (!a.sysroot.empty()) throw std::runtime_error("--sysroot is for a core: a live process's files are read through /proc");
        if (!a.maxDecoded.empty()) throw std::runtime_error("--max-decoded is for a compressed core");
    } else if (a.noStop) {
        throw std::runtime_error("--no-stop is for a live process (-p PID): a core does not run");
    }
    uint64_t maxDecoded = a.maxDecoded.empty() ? 0 : parseSize(a.maxDecoded);
    CommandRequest request;
    request.command = command;
    std::string refused;
    if (!parseCommandArguments(a.report, &request, &refused)) throw std::runtime_error(refused);
    request.useDwarf = !a.noDwarf;
    if (!a.width) request.width = terminalWidth();
    request.color = useColor(a.color);
    if (!request.historyFile.empty()) {  // read before the target, whose reading may take long
        request.history = HistoryLog::fromFile(absolute(request.historyFile));
        request.historyFile.clear();
    }
    if (a.pid) {
        LiveOptions live;
        live.pid = a.pid;
        live.stop = !a.noStop;
        live.search.debugDirs = a.debugDirs;
        if (!a.offline) live.search.debuginfod = pytstates::DebuginfodClient::fromEnvironment(tellStderr);
        LiveTarget target(live);
        if (live.stop) {
            request.beforeAnalysis = [&target] { target.stop(); };
            request.afterConsistentReads = [&target] { target.resume(); };
            request.afterAnalysis = [&target]() -> std::optional<double> { return target.resume(); };
        }
        // A process that exits (or execs) while it is read fails the analysis somewhere, or leaves
        // a report made of reads that failed: say what happened to it instead (exit status 2).
        // After a failure it is watched a moment (LiveTarget::kExitGrace): one that exits by
        // itself fails the reading while it finalizes, just before it exits.
        CommandResult result;
        try {
            result = runCommand(target, request);
            target.resume();
        } catch (const std::exception&) {
            target.resume();
            if (auto why = target.endedDuringAttach(LiveTarget::kExitGrace)) throw std::runtime_error(*why);
            throw;
        }
        if (auto why = target.endedDuringAttach(result.status == 2 ? LiveTarget::kExitGrace : std::chrono::milliseconds(0)))
            throw std::runtime_error(*why);
        if (std::getenv("PYTSTATES_STATS"))
            std::fprintf(stderr, "pytstates-stats: stop: threads stopped at %.1f ms, snapshot of %zu pages in %zu reads at %.1f ms "
                         "(copied beside the analysis, which first needed it at %.1f ms); "
                         "then %zu pages read one by one and %zu batched reads while stopped, "
                         "analysis while stopped done at %.1f ms, all threads detached at %.1f ms\n",
                         target.stoppedAllMs(), target.snapshotPages(), target.snapshotCalls(), target.snapshotDoneMs(),
                         target.snapshotNeededMs(), target.stoppedFetches(), target.prefetchCalls(), target.resumeCalledMs(),
                         target.stoppedMs());
        return finish(target, result);
    }
    CoreOptions options;
    options.corePath = a.core;
    options.executable = a.exe;
    options.search.sysroot = a.sysroot;
    options.search.debugDirs = a.debugDirs;
    if (!a.offline) options.search.debuginfod = pytstates::DebuginfodClient::fromEnvironment(tellStderr);
    options.progress = tellStderr;
    options.maxDecoded = maxDecoded;
    CoreTarget target(options);
    // gdb and lldb number a core's threads in the order of its notes: say those numbers too.
    CommandResult result = runCommand(target, request, [&target](int lwp) {
        const auto& threads = target.threads();
        for (size_t i = 0; i < threads.size(); ++i)
            if (threads[i].lwp == lwp) return static_cast<int>(i + 1);
        return 0;
    });
    return finish(target, result);
}

// What every subcommand's --help ends with: the exit statuses and a few runs to copy.
std::string helpFooter(const std::string& command) {
    std::string extra = command == "check"   ? "  pytstates check core.1234 --native     every thread's whole native stack\n"
                        : command == "internals" ? "  pytstates internals core.1234 --types  each record's registered types\n"
                                                 : "  pytstates tstates -p 1234 --locals     each Python frame's arguments and locals\n";
    return "\nTARGET is a core file or a pid (as --core FILE, --pid PID).\n"
           "\nExit status:\n"
           "  0  analysed: no crash, no hang, no error finding\n"
           "  1  analysed: the target crashed or aborted, hangs, or an error finding (the last line says which)\n"
           "  2  could not analyse: one line on stderr (with -j/--json, also {\"error\": {\"message\": ...}} on stdout)\n"
           "\nExamples:\n"
           "  pytstates " + command + " core.1234\n"
           "  pytstates " + command + " -p 1234 -j | jq .\n" + extra +
           "\nThe JSON: docs/report.schema.json; every option, finding and field: docs/usage.md, docs/findings.md, man pytstates.\n";
}

// -j/--json anywhere among the arguments (alone, or among grouped short flags such as -nj): the
// one line that stops the analysis is then also one JSON object on stdout, for `| jq`.
bool jsonAsked(int argc, char** argv) {
    std::string flags = "V";  // the short flags that group: the table's, and -V
    for (const auto& o : pytstates::reportOptions())
        if (*o.shortName && !*o.value) flags += o.shortName[1];
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") break;
        if (a == "--json") return true;
        if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find_first_not_of(flags, 1) == std::string::npos && a.find('j') != std::string::npos)
            return true;
    }
    return false;
}

bool gJson = false;

// Status 2: the line on stderr, and with --json the same as an object on stdout.
int refuse(const std::string& line) {
    progressLine.clear();
    std::fprintf(stderr, "pytstates: %s\n", line.c_str());
    if (gJson) {
        std::string text;
        pytstates::JsonWriter w(text);
        w.beginObject();
        w.key("error");
        w.beginObject();
        w.field("message", line);
        w.endObject();
        w.field("schema", 1);
        w.endObject();
        std::printf("%s\n", text.c_str());
    }
    return 2;
}

}  // namespace

// One line on stderr and status 2 for anything that stops the analysis (docs/usage.md).
extern "C" int pytstates_main(int argc, char** argv) try {
    CLI::App app{"pytstates: CPython runtimes, thread states and pybind11 internals of a core or a live process"};
    app.require_subcommand(1);
    app.set_version_flag("-V,--version", PYTSTATES_VERSION_STRING);
    gJson = jsonAsked(argc, argv);
    Arguments args;
    auto* tstates = app.add_subcommand("tstates", "runtimes, interpreters, thread states, per-thread TLS");
    auto* internals = app.add_subcommand("internals", "every pybind11 internals record and its TLS key");
    auto* check = app.add_subcommand("check", "tstates' and internals' report with the findings: crashes, hangs, stale or mismatched thread states");
    using pytstates::Command;
    for (auto [sub, command] : {std::pair{tstates, Command::Tstates}, {internals, Command::Internals}, {check, Command::Check}}) {
        addTargetOptions(sub, args);
        addReportOptions(sub, command, args);
        sub->footer(helpFooter(sub->get_name()));
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        return refuse(e.what());
    }
    pytstates::Command command = pytstates::Command::Tstates;
    if (internals->parsed()) command = pytstates::Command::Internals;
    if (check->parsed()) command = pytstates::Command::Check;
    progressLine.install();
    return run(command, args);
} catch (const std::exception& e) {
    return refuse(pytstates::shown(e.what()));
} catch (...) {
    return refuse("internal error");
}
