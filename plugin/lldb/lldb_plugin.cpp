// SPDX-License-Identifier: Apache-2.0
// pytstates in lldb: an SB API plugin (lldb-14's Python cannot run scripts as Debian ships it)
// registering py-tstates, pybind-internals and py-tstates-check. Memory through
// SBProcess::ReadMemory, threads through SBThread; a thread's fs_base from its registers where
// lldb has it (live processes), else from glibc's thread lists in memory (lldb 14 shows no
// fs_base for core files). The engine is libpytstates.so.0's, through its C ABI (pytstates.h).
// Load: plugin load /path/to/libpytstates-lldb.so
#include <elf.h>
#include <lldb/API/LLDB.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugin/engine/pytstates.h"
#include "plugin/lldb/guarded_command.h"
#include "plugin/lldb/lldb_python_note.h"
#include "plugin/lldb/lldb_target.h"
#include "plugin/lldb/pyt_commands.h"

namespace lldb {
bool PluginInitialize(lldb::SBDebugger debugger);
}

namespace {

using pytstates::GuardedCommand;
using pytstates::lldbfront::LldbTarget;
using pytstates::lldbfront::Owned;
using pytstates::lldbfront::pointersTo;
using pytstates::lldbfront::registerValue;


// The recording py-tstates-record keeps between commands lives in the library; here its breakpoints.
struct Recorder {
    bool active = false;
    std::vector<lldb::break_id_t> breakpoints;
    lldb::SBTarget target;
    int frames = 4;
    size_t probes = 0;
    // The options of an `on` typed before the program ran (or before it loaded CPython): the hook
    // breakpoint (kArmedHook) plans and sets the breakpoints once CPython is loaded.
    std::optional<std::vector<std::string>> armed;
};
Recorder recorder;

// The armed recording's hook: a breakpoint at the entry of each function that creates a thread
// state (the library names them), by name, so that lldb resolves it in whatever module defines
// one when it loads (at start, or at a dlopen); named so that it is found again in every target
// (one made in lldb's dummy target is copied into each new target). lldb-14 cannot break in
// ld.so, where _dl_debug_state would say each module load.
constexpr const char* kArmedHook = "pytstates_record_armed";  // no "-": lldb refuses it in a name

std::vector<std::unique_ptr<size_t>> batons;  // each probe's index, alive while their breakpoints are

// One lifecycle breakpoint hit, on lldb's private thread: the library reads what it keeps through
// lldb (registers, a key, the pcs of the top frames; names come later, at show, save or check),
// then on without stopping.
struct HitContext {
    lldb::SBProcess process;
    lldb::SBThread thread;
    lldb::SBFrame frame;
    uint32_t next = 0;
};

int hitRegister(void* context, const char* name, uint64_t* value) {
    auto v = registerValue(static_cast<HitContext*>(context)->frame, name);
    if (!v) return 0;
    *value = *v;
    return 1;
}

size_t hitMemory(void* context, uint64_t address, void* buffer, size_t length) {
    lldb::SBError e;
    size_t n = static_cast<HitContext*>(context)->process.ReadMemory(address, buffer, length, e);
    return e.Success() ? n : 0;
}

int hitNextPc(void* context, uint64_t* pc) {
    auto* c = static_cast<HitContext*>(context);
    lldb::SBFrame f = c->next == 0 ? c->frame : c->thread.GetFrameAtIndex(c->next);
    ++c->next;
    if (!f.IsValid()) return 0;
    *pc = f.GetPC();
    return 1;
}

bool onProbe(void* baton, lldb::SBProcess& process, lldb::SBThread& thread, lldb::SBBreakpointLocation&) {
    try {
        if (!recorder.active) return false;
        HitContext c{process, thread, thread.GetFrameAtIndex(0)};
        pytstates_hit_readers readers{&c, hitRegister, hitMemory, hitNextPc};
        pytstates_record_hit_from(*static_cast<const size_t*>(baton), static_cast<int32_t>(thread.GetThreadID()), &readers);
    } catch (...) {
    }
    return false;
}

// At _exit the modules are still mapped: name the recorded frames before they go.
bool onExit(void*, lldb::SBProcess& process, lldb::SBThread&, lldb::SBBreakpointLocation&) {
    try {
        if (!recorder.active) return false;
        LldbTarget target(process.GetTarget(), process, true, false);
        pytstates_record_name(&target.input);
    } catch (...) {
    }
    return false;
}

// A breakpoint per planned probe, and the _exit hook.
void setProbes(lldb::SBTarget target, const std::string& probesJson, int frames) {
    batons.clear();
    recorder.active = true;
    recorder.target = target;
    recorder.frames = frames;
    auto probes = nlohmann::json::parse(probesJson);
    for (size_t i = 0; i < probes.size(); ++i) {
        batons.push_back(std::make_unique<size_t>(i));
        lldb::SBBreakpoint bp = target.BreakpointCreateByAddress(probes[i].at("address").get<uint64_t>());
        bp.SetCallback(onProbe, batons.back().get());
        recorder.breakpoints.push_back(bp.GetID());
    }
    recorder.probes = probes.size();
    lldb::SBBreakpoint exitHook = target.BreakpointCreateByName("_exit");
    exitHook.SetCallback(onExit, nullptr);
    recorder.breakpoints.push_back(exitHook.GetID());
}

// What the armed hook says, outside any command: on lldb's own output.
void say(lldb::SBDebugger debugger, const std::string& text) {
    lldb::SBFile out = debugger.GetOutputFile();
    if (!out.IsValid()) return;
    size_t written = 0;
    out.Write(reinterpret_cast<const uint8_t*>(text.data()), text.size(), &written);
    out.Flush();
}

// Armed: CPython is about to make a thread state (its first, when the recording was armed before
// it was loaded): the breakpoints are set as `on` sets them, before that one is returned, and the
// hook is disabled.
bool onArmedHook(void*, lldb::SBProcess& process, lldb::SBThread&, lldb::SBBreakpointLocation& location) {
    if (!recorder.armed) return false;
    lldb::SBTarget target = process.GetTarget();
    try {
        LldbTarget pyTarget(target, process, true, false);
        auto argv = pointersTo(*recorder.armed);
        Owned text, probesJson, error;
        int frames = 4;
        int status = pytstates_record_on(argv.data(), argv.size(), &pyTarget.input, &text.text, &probesJson.text, &frames, &error.text);
        if (status == 1) return false;  // a module that defines the name but is no CPython
        recorder.armed.reset();
        location.GetBreakpoint().SetEnabled(false);
        if (status != 0) {
            say(target.GetDebugger(), "py-tstates-record: " + error.str() + "\n");
            return false;
        }
        setProbes(target, probesJson.str(), frames);
        say(target.GetDebugger(), text.str());
    } catch (const std::exception& e) {
        recorder.armed.reset();
        say(target.GetDebugger(), std::string("py-tstates-record: ") + e.what() + "\n");
    } catch (...) {
        recorder.armed.reset();
    }
    return false;
}

// Arms: the hook breakpoint in target (lldb's dummy target when none is selected). Through the
// command line for its -K false: lldb 19 may misplace a breakpoint after a prologue (see the
// docs), and the SB API sets none without skipping it.
void arm(lldb::SBDebugger debugger, lldb::SBTarget target, const std::vector<std::string>& args) {
    std::string command = std::string("breakpoint set -K false -N ") + kArmedHook + (target.IsValid() ? "" : " -D");
    std::string names = pytstates_record_hooks();
    for (size_t start = 0; start < names.size();) {
        size_t end = names.find(' ', start);
        if (end == std::string::npos) end = names.size();
        if (end > start) command += " -n " + names.substr(start, end - start);
        start = end + 1;
    }
    lldb::SBCommandReturnObject ignored;
    debugger.GetCommandInterpreter().HandleCommand(command.c_str(), ignored);
    lldb::SBTarget where = target.IsValid() ? target : debugger.GetDummyTarget();
    lldb::SBBreakpointList hooks(where);
    if (where.FindBreakpointsByName(kArmedHook, hooks))
        for (size_t i = 0; i < hooks.GetSize(); ++i) hooks.GetBreakpointAtIndex(i).SetCallback(onArmedHook, nullptr);
    recorder.armed = args;
}

// Disarms, and removes the armed hooks wherever they were copied (the dummy target's go into each
// new target; one that did its work stays, disabled, until now).
void disarm(lldb::SBDebugger debugger) {
    recorder.armed.reset();
    auto drop = [](lldb::SBTarget t) {
        if (!t.IsValid()) return;
        lldb::SBBreakpointList hooks(t);
        if (!t.FindBreakpointsByName(kArmedHook, hooks)) return;
        for (size_t i = 0; i < hooks.GetSize(); ++i) t.BreakpointDelete(hooks.GetBreakpointAtIndex(i).GetID());
    };
    drop(debugger.GetDummyTarget());
    for (uint32_t i = 0; i < debugger.GetNumTargets(); ++i) drop(debugger.GetTargetAtIndex(i));
}

class RecordCommand : public GuardedCommand {
public:
    RecordCommand() : GuardedCommand("py-tstates-record") {}

private:
    static void removeBreakpoints() {
        if (recorder.target.IsValid())
            for (auto id : recorder.breakpoints) recorder.target.BreakpointDelete(id);
        recorder.breakpoints.clear();
        recorder.probes = 0;
    }

    bool execute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) override {
        std::vector<std::string> args;
        for (char** a = arguments; a && *a; ++a) args.emplace_back(*a);
        if (args.empty()) {
            Owned status;
            status.text = pytstates_record_status(recorder.armed ? 1 : 0, recorder.probes);
            result.Printf("%s", status.str().c_str());
            result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
            return true;
        }
        if (args[0] != "on" && args[0] != "off" && args[0] != "show" && args[0] != "save")
            return fail(result, "expected on, off, show [N] or save FILE");
        std::string what = args[0];
        args.erase(args.begin());
        lldb::SBTarget target = debugger.GetSelectedTarget();
        lldb::SBProcess process = target.IsValid() ? target.GetProcess() : lldb::SBProcess();
        std::string plugin = process.IsValid() && process.GetPluginName() ? process.GetPluginName() : "";
        bool core = process.IsValid() && plugin.find("core") != std::string::npos;
        bool live = process.IsValid() && process.GetNumThreads() > 0 && !core && process.GetState() != lldb::eStateExited;
        if (what == "on") {
            if (core) return fail(result, "no running process: a core cannot be recorded (run the program under lldb: py-tstates-record on, run)");
            removeBreakpoints();
            disarm(debugger);
            auto argv = pointersTo(args);
            Owned text, probesJson, error;
            int frames = 4;
            int status;
            if (live) {
                LldbTarget pyTarget(target, process, true);
                status = pytstates_record_on(argv.data(), argv.size(), &pyTarget.input, &text.text, &probesJson.text, &frames, &error.text);
            } else {  // no process yet: the options checked, the recording armed for the next run
                status = pytstates_record_on(argv.data(), argv.size(), nullptr, &text.text, &probesJson.text, &frames, &error.text);
            }
            if (status == 2) return fail(result, error.str());
            if (status == 1) {
                arm(debugger, target, args);
            } else {
                setProbes(target, probesJson.str(), frames);
            }
            result.Printf("%s", text.str().c_str());
            result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
            return true;
        }
        if (what == "off" && recorder.armed) {
            disarm(debugger);
            result.Printf("recording disarmed\n");
            result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
            return true;
        }
        if (!recorder.active) return fail(result, "nothing recorded: py-tstates-record on first");
        if (what == "off") {
            removeBreakpoints();
            disarm(debugger);
            uint64_t stats[4];
            pytstates_record_stats(stats);
            result.Printf("recording stopped: %llu breakpoint hits, %llu events recorded, %llu kept, %llu dropped\n",
                          static_cast<unsigned long long>(stats[0]), static_cast<unsigned long long>(stats[1]),
                          static_cast<unsigned long long>(stats[2]), static_cast<unsigned long long>(stats[3]));
            result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
            return true;
        }
        if (what == "show" && args.size() > 1) return fail(result, "show takes at most one number");
        if (what == "save" && args.size() != 1) return fail(result, "save needs one FILE");
        std::unique_ptr<LldbTarget> pyTarget;
        if (live) pyTarget = std::make_unique<LldbTarget>(target, process, true);
        Owned output, error;
        if (pytstates_record_output(what.c_str(), args.empty() ? "" : args[0].c_str(), pyTarget ? &pyTarget->input : nullptr, &output.text,
                                    &error.text) != 0)
            return fail(result, error.str());
        result.Printf("%s", output.str().c_str());
        result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
        return true;
    }
};

// The text's width: lldb's term-width where lldb writes to a terminal (its driver sets it from
// the terminal's size, and on SIGWINCH); 0, unwrapped, where it does not (lldb -b into a pipe or
// a log, whose term-width is lldb's default 80, no terminal's), as the CLI does.
unsigned terminalWidth(lldb::SBDebugger debugger) {
    FILE* out = debugger.GetOutputFileHandle();
    return out && isatty(fileno(out)) ? debugger.GetTerminalWidth() : 0;
}

class PytstatesCommand : public GuardedCommand {
public:
    PytstatesCommand(const char* command, const char* name) : GuardedCommand(name), command_(command) {}

private:
    bool execute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) override {
        // lldb's own columns first, as the CLI takes its terminal's; a --width typed comes later and wins.
        std::vector<std::string> args{"--width", std::to_string(terminalWidth(debugger))};
        for (char** a = arguments; a && *a; ++a) args.emplace_back(*a);
        auto argv = pointersTo(args);
        Owned output, error;
        if (pytstates_run(command_, argv.data(), argv.size(), nullptr, &output.text, &error.text) != 0) return fail(result, error.str());
        lldb::SBTarget target = debugger.GetSelectedTarget();
        lldb::SBProcess process = target.IsValid() ? target.GetProcess() : lldb::SBProcess();
        if (!process.IsValid() || process.GetNumThreads() == 0) return fail(result, "no process or core: attach to a process or load a core first (target create --core FILE)");
        std::string plugin = process.GetPluginName() ? process.GetPluginName() : "";
        bool live = plugin.find("core") == std::string::npos;

        LldbTarget pyTarget(target, process, live);
        if (pytstates_run(command_, argv.data(), argv.size(), &pyTarget.input, &output.text, &error.text) == 2) return fail(result, error.str());
        result.Printf("%s", output.str().c_str());
        result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
        return true;
    }

    const char* command_;
};

}  // namespace

bool lldb::PluginInitialize(lldb::SBDebugger debugger) {
    lldb::SBCommandInterpreter interpreter = debugger.GetCommandInterpreter();
    struct Entry {
        const char* name;
        const char* command;
    };
    static const Entry entries[] = {{"py-tstates", "tstates"}, {"pybind-internals", "internals"}, {"py-tstates-check", "check"}};
    // The help and the usage line from the library's option table, as the CLI's and gdb's.
    static std::vector<std::string> helps, syntaxes;
    for (const auto& e : entries) {
        Owned text, syntax;
        text.text = pytstates_help(e.command);
        syntax.text = pytstates_syntax(e.command);
        helps.push_back(text.str());
        syntaxes.push_back(syntax.str());
    }
    for (size_t i = 0; i < 3; ++i)
        interpreter.AddCommand(entries[i].name, new PytstatesCommand(entries[i].command, entries[i].name), helps[i].c_str(),
                               syntaxes[i].c_str());
    static std::string recordHelpText = [] {
        Owned text;
        text.text = pytstates_record_help();
        return text.str();
    }();
    interpreter.AddCommand("py-tstates-record", new RecordCommand(), recordHelpText.c_str(),
                           "py-tstates-record on [--frames N] [--per-tstate N] [--uses N] [--tstates N] | off | show [N] | save FILE");
    pytstates::lldbfront::addPytCommands(debugger);
    pytstates::lldbfront::addTypeSummaries(debugger);
    std::string note = pytstates::lldbfront::brokenPythonNote();
    if (!note.empty()) {
        lldb::SBFile err = debugger.GetErrorFile();
        size_t written = 0;
        if (err.IsValid()) {
            err.Write(reinterpret_cast<const uint8_t*>(note.data()), note.size(), &written);
            err.Flush();
        }
    }
    return true;
}
