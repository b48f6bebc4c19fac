// The C++ core as a Python extension for gdb's embedded Python: one call runs a command on a
// DebuggerTarget whose memory, threads and auxiliary vector come from gdb (plugin/gdb/pytstates).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

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

// (lwp, fs_base, registers in DWARF order: empty when gdb could not read them)
using GdbThread = std::tuple<int, uint64_t, std::vector<uint64_t>>;
// (lwp, si_signo, si_code, si_addr, si_pid, si_uid) of the core's first thread, from $_siginfo
using GdbSiginfo = std::tuple<int, int, int, uint64_t, int, int>;

std::tuple<int, std::string, std::string> run(const std::string& command, const std::vector<std::string>& args,
                                              const py::function& readMemory, const std::vector<GdbThread>& threads,
                                              const std::map<uint64_t, uint64_t>& auxv, const std::string& executable, int pid,
                                              bool live, bool local, const std::map<int, int>& gdbThreadNumbers, const std::string& sysroot,
                                              const std::optional<GdbSiginfo>& siginfo) {
    CommandRequest request;
    request.command = commandNamed(command);
    std::string error;
    if (!parseCommandArguments(args, &request, &error)) return {2, "", error};
    DebuggerInput input;
    input.read = [readMemory](uint64_t addr, void* buf, size_t len) { return readThroughGdb(readMemory, addr, buf, len); };
    const Arch& arch = hostArch();
    for (const auto& [lwp, fsBase, registers] : threads) {
        OsThread t;
        t.lwp = lwp;
        t.threadPointer = fsBase;
        t.pthread = fsBase;
        if (registers.size() == arch.dwarfRegisters) {
            t.registers = registers;
            t.pc = registers[arch.pcRegister];
            t.sp = registers[arch.spRegister];
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
    input.executable = executable;
    input.pid = pid;
    input.live = live;
    input.search.sysroot = sysroot;
    if (live && local && pid > 0) input.search.processDir = "/proc/" + std::to_string(pid);  // gdb's native target: this machine
    try {
        DebuggerTarget target(input);
        CommandResult result = runCommand(target, request, [&](int lwp) {
            auto it = gdbThreadNumbers.find(lwp);
            return it == gdbThreadNumbers.end() ? 0 : it->second;
        });
        return {result.status, result.output, result.error};
    } catch (const std::exception& e) {
        return {2, "", e.what()};
    }
}

std::string help(const std::string& command) { return commandHelp(commandNamed(command)); }

}  // namespace

PYBIND11_MODULE(_pytstates_gdb, m) {
    m.doc() = "pytstates core for gdb";
    m.def("run", &run, "Run tstates|internals|check on what gdb debugs; returns (status, output, error)");
    m.def("help", &help);
    m.attr("built_for") = PY_VERSION;
}
