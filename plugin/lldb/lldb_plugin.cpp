// SPDX-License-Identifier: Apache-2.0
// pytstates in lldb: an SB API plugin (lldb-14's Python cannot run scripts as Debian ships it)
// registering py-tstates, pybind-internals and py-tstates-check. Memory through
// SBProcess::ReadMemory, threads through SBThread, registers by the names symbols/arch gives the
// target's machine; a thread's thread pointer (fs_base, tpidr) from its registers where lldb has
// it (live processes), else from glibc's thread lists in memory (lldb 14 shows no fs_base for
// core files). Load: plugin load /path/to/libpytstates-lldb.so
#include <elf.h>
#include <lldb/API/LLDB.h>

#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands/history/history_show.h"
#include "commands/history/recording.h"
#include "commands/run.h"
#include "plugin/lldb/guarded_command.h"
#include "symbols/debugger/debugger_target.h"
#include "symbols/live/thread_registers.h"

namespace lldb {
bool PluginInitialize(lldb::SBDebugger debugger);
}

namespace {

using namespace pytstates;

// The auxiliary vector: /proc/PID/auxv for a live process; for a core, rebuilt from the
// executable's ELF header at its load address (AT_PHDR, AT_PHNUM, AT_ENTRY are all it gives).
std::map<uint64_t, uint64_t> auxvOf(lldb::SBTarget target, lldb::SBProcess process, bool live) {
    std::map<uint64_t, uint64_t> aux;
    if (live) {
        std::ifstream in("/proc/" + std::to_string(process.GetProcessID()) + "/auxv", std::ios::binary);
        uint64_t kv[2];
        while (in.read(reinterpret_cast<char*>(kv), sizeof kv) && kv[0] != AT_NULL) aux[kv[0]] = kv[1];
        if (!aux.empty()) return aux;
    }
    lldb::SBModule exe = target.GetModuleAtIndex(0);
    if (!exe.IsValid()) return aux;
    lldb::addr_t header = exe.GetObjectFileHeaderAddress().GetLoadAddress(target);
    if (header == LLDB_INVALID_ADDRESS) return aux;
    Elf64_Ehdr ehdr;
    lldb::SBError error;
    // The header page may be missing from a core: read it through the target (file-backed).
    if (target.ReadMemory(target.ResolveLoadAddress(header), &ehdr, sizeof ehdr, error) != sizeof ehdr ||
        std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0)
        return aux;
    uint64_t firstLoad = 0;
    for (unsigned i = 0; i < ehdr.e_phnum; ++i) {
        Elf64_Phdr ph;
        if (target.ReadMemory(target.ResolveLoadAddress(header + ehdr.e_phoff + i * sizeof ph), &ph, sizeof ph, error) != sizeof ph)
            break;
        if (ph.p_type == PT_LOAD) {
            firstLoad = ph.p_vaddr & ~uint64_t(0xfff);
            break;
        }
    }
    uint64_t bias = header - firstLoad;
    aux[AT_PHDR] = header + ehdr.e_phoff;
    aux[AT_PHNUM] = ehdr.e_phnum;
    aux[AT_ENTRY] = bias + ehdr.e_entry;
    return aux;
}

// A core gives the plugin no auxiliary vector: lldb lists the vDSO it found as the module "[vdso]".
uint64_t vdsoOf(lldb::SBTarget target) {
    for (uint32_t i = 0; i < target.GetNumModules(); ++i) {
        lldb::SBModule m = target.GetModuleAtIndex(i);
        const char* name = m.GetFileSpec().GetFilename();
        if (!name || std::strcmp(name, "[vdso]") != 0) continue;
        lldb::addr_t header = m.GetObjectFileHeaderAddress().GetLoadAddress(target);
        if (header != LLDB_INVALID_ADDRESS) return header;
    }
    return 0;
}

std::optional<uint64_t> registerValue(lldb::SBFrame& frame, const char* name) {
    lldb::SBValue value = frame.FindRegister(name);
    if (!value.IsValid()) return std::nullopt;
    lldb::SBError e;
    uint64_t v = value.GetValueAsUnsigned(e, 0);
    if (!e.Success()) return std::nullopt;
    return v;
}

// The machine of the target lldb debugs (its triple), else this one's.
const Arch& archOf(lldb::SBTarget target) {
    const char* triple = target.GetTriple();
    const Arch* arch = triple ? archNamed(triple) : nullptr;
    return arch ? *arch : hostArch();
}

// The innermost frame's general registers in DWARF order, for the unwinder; empty when lldb
// lacks one.
std::vector<uint64_t> registers(lldb::SBFrame& frame, const std::vector<std::string>& names) {
    std::vector<uint64_t> out;
    for (const auto& name : names) {
        auto v = registerValue(frame, name.c_str());
        if (!v) return {};
        out.push_back(*v);
    }
    return out;
}

// lldb's target.debug-file-search-paths: where the user keeps separate debug files (a -dbg package
// unpacked elsewhere), searched by build-id as lldb does. lldb 14's API gives a setting only as
// the lines `settings show` prints ("[0]: /path").
std::vector<std::string> debugFileSearchPaths(lldb::SBDebugger debugger) {
    std::vector<std::string> out;
    lldb::SBStringList lines = lldb::SBDebugger::GetInternalVariableValue("target.debug-file-search-paths", debugger.GetInstanceName());
    for (uint32_t i = 0; i < lines.GetSize(); ++i) {
        std::string text = lines.GetStringAtIndex(i) ? lines.GetStringAtIndex(i) : "";
        size_t start = 0;
        while (start < text.size()) {
            size_t end = text.find('\n', start);
            std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
            start = end == std::string::npos ? text.size() : end + 1;
            size_t open = line.find('['), close = line.find("]: ");
            if (open == std::string::npos || close == std::string::npos || close < open) continue;
            std::string path = line.substr(close + 3);
            while (!path.empty() && (path.back() == ' ' || path.back() == '\r')) path.pop_back();
            if (!path.empty()) out.push_back(path);
        }
    }
    return out;
}

// What lldb knows of the process, as the C++ core takes it; indexOfLwp (may be null): lldb's
// thread index of each LWP. withThreads false: no thread is asked (inside a breakpoint callback).
DebuggerInput inputOf(lldb::SBTarget target, lldb::SBProcess process, bool live, std::map<int, int>* indexOfLwp, bool withThreads = true) {
    DebuggerInput input;
    // A core leaves clean file pages out, and lldb's core reader does not fill them in:
    // SBTarget::ReadMemory serves them from the module's file.
    input.read = [process, target](uint64_t addr, void* buf, size_t len) mutable -> size_t {
        lldb::SBError e;
        size_t n = process.ReadMemory(addr, buf, len, e);
        if (e.Success() && n == len) return n;
        lldb::SBAddress where = target.ResolveLoadAddress(addr);
        if (!where.IsValid() || !where.GetSection().IsValid()) return e.Success() ? n : 0;
        lldb::SBError fileError;
        size_t fromFile = target.ReadMemory(where, buf, len, fileError);
        return fileError.Success() ? fromFile : (e.Success() ? n : 0);
    };
    const Arch& arch = archOf(target);
    const std::vector<std::string> names = arch.registerNames();
    for (uint32_t i = 0; withThreads && i < process.GetNumThreads(); ++i) {
        lldb::SBThread thread = process.GetThreadAtIndex(i);
        OsThread t;
        t.lwp = static_cast<int>(thread.GetThreadID());
        lldb::SBFrame frame = thread.GetFrameAtIndex(0);
        // struct pthread, pc and sp follow in DebuggerTarget, by the executable's machine
        if (auto tp = registerValue(frame, arch.threadPointerRegister())) t.threadPointer = *tp;
        t.registers = registers(frame, names);
        // A core's first thread took the fatal signal (lldb's stop reason of each thread); in a
        // live process, the thread lldb stopped on a signal (DebuggerTarget keeps the fatal ones).
        if ((live ? !input.crash : i == 0) && thread.GetStopReason() == lldb::eStopReasonSignal &&
            thread.GetStopReasonDataCount() > 0) {
            CrashSignal c;
            c.lwp = t.lwp;
            c.signal = static_cast<int>(thread.GetStopReasonDataAtIndex(0));
            input.crash = c;
        }
        if (indexOfLwp) (*indexOfLwp)[t.lwp] = static_cast<int>(thread.GetIndexID());
        input.threads.push_back(t);
    }
    auto aux = auxvOf(target, process, live);
    input.atPhdr = aux[AT_PHDR];
    input.atPhnum = aux[AT_PHNUM];
    input.atEntry = aux[AT_ENTRY];
    input.atSysinfoEhdr = aux.count(AT_SYSINFO_EHDR) ? aux[AT_SYSINFO_EHDR] : vdsoOf(target);
    char path[4096] = "";
    if (target.GetExecutable().IsValid()) target.GetExecutable().GetPath(path, sizeof path);
    input.executable = path;
    input.pid = static_cast<int>(process.GetProcessID());
    input.live = live;
    input.search.debugDirs = debugFileSearchPaths(target.GetDebugger());
    // lldb hands over no syscall register (orig_rax): for a live process on this machine (the host platform, not a
    // remote lldb-server's) the kernel says which call each blocked thread is in.
    const char* platform = target.GetPlatform().GetName();
    if (live && input.pid > 0 && platform && std::string(platform) == "host") {
        for (auto& t : input.threads) t.syscall = procThreadSyscall(input.pid, t.lwp);
        input.localProcess = true;  // and their names (comm)
    }
    return input;
}

// The recording py-tstates-record keeps between commands, and its breakpoints.
struct Recorder {
    std::unique_ptr<Recording> recording;
    std::vector<lldb::break_id_t> breakpoints;
    lldb::SBTarget target;
};
Recorder recorder;

std::vector<std::unique_ptr<size_t>> batons;  // each probe's index, alive while their breakpoints are

// One lifecycle breakpoint hit, on lldb's private thread: the core reads what it keeps through
// lldb (Recording::hitFrom: registers, a key, the pcs of the top frames; names come later, at
// show, save or check), then on without stopping.
bool onProbe(void* baton, lldb::SBProcess& process, lldb::SBThread& thread, lldb::SBBreakpointLocation&) {
    try {
        if (!recorder.recording) return false;
        lldb::SBFrame frame = thread.GetFrameAtIndex(0);
        uint32_t next = 0;
        HitReaders readers;
        readers.readRegister = [&](const std::string& name) { return registerValue(frame, name.c_str()); };
        readers.readMemory = [&](uint64_t address, void* buffer, size_t length) {
            lldb::SBError e;
            return process.ReadMemory(address, buffer, length, e) == length && e.Success();
        };
        readers.nextPc = [&]() -> std::optional<uint64_t> {
            lldb::SBFrame f = next == 0 ? frame : thread.GetFrameAtIndex(next);
            ++next;
            if (!f.IsValid()) return std::nullopt;
            return f.GetPC();
        };
        recorder.recording->hitFrom(*static_cast<const size_t*>(baton), static_cast<int>(thread.GetThreadID()), readers);
    } catch (...) {
    }
    return false;
}

// At _exit the modules are still mapped: name the recorded frames before they go.
bool onExit(void*, lldb::SBProcess& process, lldb::SBThread&, lldb::SBBreakpointLocation&) {
    try {
        if (!recorder.recording) return false;
        DebuggerTarget target(inputOf(process.GetTarget(), process, true, nullptr, false));
        recorder.recording->log()->nameFrames(target);
    } catch (...) {
    }
    return false;
}

class RecordCommand : public GuardedCommand {
public:
    RecordCommand() : GuardedCommand("py-tstates-record") {}

private:
    static void removeBreakpoints() {
        if (recorder.target.IsValid())
            for (auto id : recorder.breakpoints) recorder.target.BreakpointDelete(id);
        recorder.breakpoints.clear();
    }

    bool execute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) override {
        std::vector<std::string> args;
        for (char** a = arguments; a && *a; ++a) args.emplace_back(*a);
        if (args.empty() || (args[0] != "on" && args[0] != "off" && args[0] != "show" && args[0] != "save"))
            return fail(result, "expected on, off, show [N] or save FILE");
        std::string what = args[0];
        args.erase(args.begin());
        lldb::SBTarget target = debugger.GetSelectedTarget();
        lldb::SBProcess process = target.IsValid() ? target.GetProcess() : lldb::SBProcess();
        std::string plugin = process.IsValid() && process.GetPluginName() ? process.GetPluginName() : "";
        bool live = process.IsValid() && process.GetNumThreads() > 0 && plugin.find("core") == std::string::npos &&
                    process.GetState() != lldb::eStateExited;
        if (what == "on") {
            if (!live) return fail(result, "no running process: recording needs the program running under lldb (breakpoint set -n main -K false, run)");
            HistoryLog::Limits limits;
            int frames = 4;
            std::string error;
            if (!parseRecordOptions(args, &limits, &frames, &error)) return fail(result, error);
            removeBreakpoints();
            DebuggerTarget pyTarget(inputOf(target, process, true, nullptr));
            auto next = std::make_unique<Recording>(pyTarget, limits, frames);
            batons.clear();
            recorder.recording = std::move(next);
            recorder.target = target;
            const auto& probes = recorder.recording->plan().probes;
            for (size_t i = 0; i < probes.size(); ++i) {
                batons.push_back(std::make_unique<size_t>(i));
                lldb::SBBreakpoint bp = target.BreakpointCreateByAddress(probes[i].address);
                bp.SetCallback(onProbe, batons.back().get());
                recorder.breakpoints.push_back(bp.GetID());
            }
            lldb::SBBreakpoint exitHook = target.BreakpointCreateByName("_exit");
            exitHook.SetCallback(onExit, nullptr);
            recorder.breakpoints.push_back(exitHook.GetID());
            result.Printf("%s", recorder.recording->startText().c_str());
            result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
            return true;
        }
        if (!recorder.recording) return fail(result, "nothing recorded: py-tstates-record on first");
        auto log = recorder.recording->log();
        if (what == "off") {
            removeBreakpoints();
            result.Printf("recording stopped: %llu breakpoint hits, %llu events recorded, %zu kept, %llu dropped\n",
                          static_cast<unsigned long long>(log->hits()), static_cast<unsigned long long>(log->recorded()), log->events().size(),
                          static_cast<unsigned long long>(log->dropped()));
            result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
            return true;
        }
        if (live) {
            DebuggerTarget pyTarget(inputOf(target, process, true, nullptr, false));
            log->nameFrames(pyTarget);
        }
        if (what == "show") {
            size_t last = 0;
            if (args.size() > 1) return fail(result, "show takes at most one number");
            std::string error;
            if (!args.empty() && !parseShowCount(args[0], &last, &error)) return fail(result, error);
            result.Printf("%s", historyText(*log, last).c_str());
            result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
            return true;
        }
        if (args.size() != 1) return fail(result, "save needs one FILE");
        result.Printf("%s", saveHistory(*log, args[0]).c_str());
        result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
        return true;
    }
};

class PytstatesCommand : public GuardedCommand {
public:
    PytstatesCommand(Command command, const char* name) : GuardedCommand(name), command_(command) {}

private:
    bool execute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) override {
        CommandRequest request;
        request.command = command_;
        std::vector<std::string> args;
        for (char** a = arguments; a && *a; ++a) args.emplace_back(*a);
        std::string error;
        if (!parseCommandArguments(args, &request, &error)) return fail(result, error);
        lldb::SBTarget target = debugger.GetSelectedTarget();
        lldb::SBProcess process = target.IsValid() ? target.GetProcess() : lldb::SBProcess();
        if (!process.IsValid() || process.GetNumThreads() == 0) return fail(result, "no process or core: attach to a process or load a core first (target create --core FILE)");
        std::string plugin = process.GetPluginName() ? process.GetPluginName() : "";
        bool live = plugin.find("core") == std::string::npos;

        std::map<int, int> indexOfLwp;
        DebuggerInput input = inputOf(target, process, live, &indexOfLwp);
        DebuggerTarget pyTarget(input);
        if (recorder.recording && !recorder.recording->log()->empty()) request.history = recorder.recording->log();
        CommandResult out = runCommand(pyTarget, request, [&](int lwp) {
            auto it = indexOfLwp.find(lwp);
            return it == indexOfLwp.end() ? 0 : it->second;
        });
        if (out.status == 2) return fail(result, out.error);
        result.Printf("%s", out.output.c_str());
        result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
        return true;
    }

    Command command_;
};

}  // namespace

bool lldb::PluginInitialize(lldb::SBDebugger debugger) {
    lldb::SBCommandInterpreter interpreter = debugger.GetCommandInterpreter();
    struct Entry {
        const char* name;
        Command command;
        const char* syntax;
    };
    static const Entry entries[] = {
        {"py-tstates", Command::Tstates, "py-tstates [-j|--json] [-f|--frames N] [-n|--native] [-g|--greenlets] [--tasks]"},
        {"pybind-internals", Command::Internals, "pybind-internals [-j|--json] [-t|--types]"},
        {"py-tstates-check", Command::Check, "py-tstates-check [-j|--json] [-f|--frames N] [-n|--native] [-g|--greenlets] [--tasks]"},
    };
    static std::vector<std::string> helps;
    for (const auto& e : entries) helps.push_back(commandHelp(e.command));
    for (size_t i = 0; i < 3; ++i)
        interpreter.AddCommand(entries[i].name, new PytstatesCommand(entries[i].command, entries[i].name), helps[i].c_str(),
                               entries[i].syntax);
    static std::string recordHelpText = recordHelp();
    interpreter.AddCommand("py-tstates-record", new RecordCommand(), recordHelpText.c_str(),
                           "py-tstates-record on [--frames N] [--per-tstate N] [--uses N] [--tstates N] | off | show [N] | save FILE");
    return true;
}
