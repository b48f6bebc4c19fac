// SPDX-License-Identifier: Apache-2.0
// The C++ core as a Python extension for gdb's embedded Python: one call runs a command on a
// DebuggerTarget whose memory, threads and auxiliary vector come from gdb (plugin/python/pytstates).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "commands/history/history_show.h"
#include "commands/history/recording.h"
#include "commands/run.h"
#include "symbols/debugger/debugger_target.h"

namespace py = pybind11;
using namespace pytstates;

namespace {

Command commandNamed(const std::string& name) {
    if (name == "internals") return Command::Internals;
    if (name == "check") return Command::Check;
    return Command::Tstates;
}

// read_memory(addr, length) -> bytes or None; never lets a Python error into the C++ core.
size_t readThroughGdb(const py::function& readMemory, uint64_t addr, void* buf, size_t len) {
    try {
        py::object got = readMemory(addr, len);
        if (got.is_none()) return 0;
        std::string bytes = got.cast<std::string>();
        size_t n = std::min(bytes.size(), len);
        std::memcpy(buf, bytes.data(), n);
        return n;
    } catch (const std::exception&) {
        PyErr_Clear();
        return 0;
    }
}

// (lwp, fs_base, registers in DWARF order, then orig_rax when gdb has it: empty when gdb could not read them)
using GdbThread = std::tuple<int, uint64_t, std::vector<uint64_t>>;
// (lwp, si_signo, si_code, si_addr, si_pid, si_uid) of the core's first thread, from $_siginfo
using GdbSiginfo = std::tuple<int, int, int, uint64_t, int, int>;

// What gdb knows of the process, as the C++ core takes it.
DebuggerInput inputFrom(const py::function& readMemory, const std::vector<GdbThread>& threads, const std::map<uint64_t, uint64_t>& auxv,
                        const std::string& executable, int pid, bool live, bool local, const std::string& sysroot,
                        const std::optional<GdbSiginfo>& siginfo, const std::vector<std::string>& debugDirs) {
    DebuggerInput input;
    input.read = [readMemory](uint64_t addr, void* buf, size_t len) { return readThroughGdb(readMemory, addr, buf, len); };
    const Arch& arch = hostArch();
    for (const auto& [lwp, fsBase, registers] : threads) {
        OsThread t;
        t.lwp = lwp;
        t.threadPointer = fsBase;
        t.pthread = fsBase;
        if (registers.size() == arch.dwarfRegisters || registers.size() == arch.dwarfRegisters + 1) {
            t.registers.assign(registers.begin(), registers.begin() + arch.dwarfRegisters);
            t.pc = registers[arch.pcRegister];
            t.sp = registers[arch.spRegister];
            if (registers.size() > arch.dwarfRegisters && static_cast<int64_t>(registers.back()) >= 0)
                t.syscall = static_cast<int64_t>(registers.back());
        }
        input.threads.push_back(t);
    }
    if (siginfo) {
        const auto& [lwp, signo, code, address, senderPid, senderUid] = *siginfo;
        CrashSignal c;
        c.lwp = lwp;
        c.signal = signo;
        c.haveSiginfo = true;
        c.code = code;
        if (code > 0) c.faultAddress = address;
        if (code <= 0) {
            c.senderPid = senderPid;
            c.senderUid = senderUid;
        }
        input.crash = c;
    }
    auto aux = [&](uint64_t type) {
        auto it = auxv.find(type);
        return it == auxv.end() ? uint64_t(0) : it->second;
    };
    input.atPhdr = aux(3);   // AT_PHDR
    input.atPhnum = aux(5);  // AT_PHNUM
    input.atEntry = aux(9);  // AT_ENTRY
    input.atSysinfoEhdr = aux(33);  // AT_SYSINFO_EHDR: the vDSO, named from its image
    input.executable = executable;
    input.pid = pid;
    input.live = live;
    input.search.sysroot = sysroot;
    input.search.debugDirs = debugDirs;
    if (live && local && pid > 0) input.search.processDir = "/proc/" + std::to_string(pid);  // gdb's native target: this machine
    return input;
}

// The recording py-tstates-record keeps between commands (one per gdb session).
std::unique_ptr<Recording> recording;

std::tuple<int, std::string, std::string> run(const std::string& command, const std::vector<std::string>& args,
                                              const py::function& readMemory, const std::vector<GdbThread>& threads,
                                              const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid,
                                              bool live, bool local, const std::map<int, int>& gdbThreadNumbers, const std::string& sysroot,
                                              const std::optional<GdbSiginfo>& siginfo, const std::vector<std::string>& debugDirs) {
    CommandRequest request;
    request.command = commandNamed(command);
    std::string error;
    if (!parseCommandArguments(args, &request, &error)) return {2, "", error};
    if (recording && !recording->log()->empty()) request.history = recording->log();
    try {
        DebuggerTarget target(inputFrom(readMemory, threads, auxv, executable, pid, live, local, sysroot, siginfo, debugDirs));
        CommandResult result = runCommand(target, request, [&](int lwp) {
            auto it = gdbThreadNumbers.find(lwp);
            return it == gdbThreadNumbers.end() ? 0 : it->second;
        });
        return {result.status, result.output, result.error};
    } catch (const std::exception& e) {
        return {2, "", e.what()};
    }
}

// (address, event, tstate register, key register, key offset) per breakpoint to set
using ProbeRow = std::tuple<uint64_t, std::string, std::string, std::string, uint64_t>;

// py-tstates-record on: plans the probes; returns (status, text, error, probes, frames per hit).
std::tuple<int, std::string, std::string, std::vector<ProbeRow>, int> recordOn(
    const std::vector<std::string>& args, const py::function& readMemory, const std::vector<GdbThread>& threads,
    const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid, bool local, const std::string& sysroot,
    const std::vector<std::string>& debugDirs) {
    HistoryLog::Limits limits;
    int frames = 4;
    std::string error;
    if (!parseRecordOptions(args, &limits, &frames, &error)) return {2, "", error, {}, 0};
    try {
        DebuggerTarget target(inputFrom(readMemory, threads, auxv, executable, pid, true, local, sysroot, std::nullopt, debugDirs));
        auto next = std::make_unique<Recording>(target, limits);
        std::vector<ProbeRow> rows;
        for (const auto& p : next->plan().probes)
            rows.emplace_back(p.address, lifecycleEventName(p.event), p.tstateRegister, p.keyRegister, p.keyOffset);
        std::string text = next->startText();
        recording = std::move(next);
        return {0, text, "", rows, frames};
    } catch (const std::exception& e) {
        return {2, "", e.what(), {}, 0};
    }
}

// One breakpoint hit (the hot path: no naming, no target). key < 0: none.
void recordHit(size_t probe, uint64_t tstate, int lwp, int64_t key, std::vector<uint64_t> pcs) {
    if (!recording) return;
    std::optional<uint32_t> k;
    if (key >= 0) k = static_cast<uint32_t>(key);
    recording->hit(probe, tstate, lwp, k, std::move(pcs));
}

// show / save: names the frames through what gdb has open now.
std::tuple<int, std::string, std::string> recordOutput(const std::string& what, const std::string& argument, const py::function& readMemory,
                                                       const std::vector<GdbThread>& threads, const std::map<uint64_t, uint64_t>& auxv,
                                                       const std::string& executable, int pid, bool live, bool local,
                                                       const std::string& sysroot, const std::vector<std::string>& debugDirs) {
    if (!recording) return {2, "", "nothing recorded: py-tstates-record on first"};
    auto log = recording->log();
    try {
        if (!threads.empty()) {
            DebuggerTarget target(inputFrom(readMemory, threads, auxv, executable, pid, live, local, sysroot, std::nullopt, debugDirs));
            log->nameFrames(target);
        }
        if (what == "show") {
            size_t last = 0;
            std::string error;
            if (!argument.empty() && !parseShowCount(argument, &last, &error)) return {2, "", error};
            return {0, historyText(*log, last), ""};
        }
        return {0, saveHistory(*log, argument), ""};
    } catch (const std::exception& e) {
        return {2, "", e.what()};
    }
}

// Names the recorded frames while the modules are still mapped (the process is about to exit).
void recordName(const py::function& readMemory, const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid,
                bool local, const std::string& sysroot, const std::vector<std::string>& debugDirs) {
    if (!recording) return;
    try {
        DebuggerTarget target(inputFrom(readMemory, {}, auxv, executable, pid, true, local, sysroot, std::nullopt, debugDirs));
        recording->log()->nameFrames(target);
    } catch (const std::exception&) {
    }
}

// (hits, events recorded, events kept, events dropped)
std::tuple<uint64_t, uint64_t, size_t, uint64_t> recordStats() {
    if (!recording) return {0, 0, 0, 0};
    auto log = recording->log();
    return {log->hits(), log->recorded(), log->events().size(), log->dropped()};
}

std::string help(const std::string& command) { return commandHelp(commandNamed(command)); }

}  // namespace

PYBIND11_MODULE(_pytstates_core, m) {
    m.doc() = "pytstates core for gdb";
    m.def("run", &run, "Run tstates|internals|check on what gdb debugs; returns (status, output, error)");
    m.def("help", &help);
    m.def("record_on", &recordOn, "Plan the lifecycle breakpoints; returns (status, text, error, probes, frames)");
    m.def("record_hit", &recordHit, "One breakpoint hit");
    m.def("record_output", &recordOutput, "show [N] | save FILE");
    m.def("record_stats", &recordStats);
    m.def("record_name", &recordName);
    m.def("record_help", &recordHelp);
    m.attr("built_for") = PY_VERSION;
}
