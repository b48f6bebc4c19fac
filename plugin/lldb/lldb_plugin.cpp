// pytstates in lldb: an SB API plugin (lldb-14's Python cannot run scripts as Debian ships it)
// registering py-tstates, pybind-internals and py-tstates-check. Memory through
// SBProcess::ReadMemory, threads through SBThread; a thread's fs_base from its registers where
// lldb has it (live processes), else from glibc's thread lists in memory (lldb 14 shows no
// fs_base for core files). Load: plugin load /path/to/libpytstates-lldb.so
#include <elf.h>
#include <lldb/API/LLDB.h>

#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands/run.h"
#include "symbols/debugger/debugger_target.h"

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

std::optional<uint64_t> registerValue(lldb::SBFrame& frame, const char* name) {
    lldb::SBValue value = frame.FindRegister(name);
    if (!value.IsValid()) return std::nullopt;
    lldb::SBError e;
    uint64_t v = value.GetValueAsUnsigned(e, 0);
    if (!e.Success()) return std::nullopt;
    return v;
}

// The innermost frame's general registers in DWARF order (x86_64: rax, rdx, rcx, rbx, rsi, rdi,
// rbp, rsp, r8-r15, rip), for the unwinder; empty when lldb lacks one.
std::vector<uint64_t> registers(lldb::SBFrame& frame) {
    static const char* const names[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
                                        "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
    std::vector<uint64_t> out;
    for (const char* name : names) {
        auto v = registerValue(frame, name);
        if (!v) return {};
        out.push_back(*v);
    }
    return out;
}

class PytstatesCommand : public lldb::SBCommandPluginInterface {
public:
    PytstatesCommand(Command command, const char* name) : command_(command), name_(name) {}

    bool DoExecute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) override {
        try {
            return execute(debugger, arguments, result);
        } catch (const std::exception& e) {
            fail(result, e.what());
        } catch (...) {
            fail(result, "internal error");
        }
        return false;
    }

private:
    void fail(lldb::SBCommandReturnObject& result, const std::string& why) {
        result.SetError((name_ + ": " + why).c_str());
        result.SetStatus(lldb::eReturnStatusFailed);
    }

    bool execute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) {
        CommandRequest request;
        request.command = command_;
        std::vector<std::string> args;
        for (char** a = arguments; a && *a; ++a) args.emplace_back(*a);
        std::string error;
        if (!parseCommandArguments(args, &request, &error)) {
            fail(result, error);
            return false;
        }
        lldb::SBTarget target = debugger.GetSelectedTarget();
        lldb::SBProcess process = target.IsValid() ? target.GetProcess() : lldb::SBProcess();
        if (!process.IsValid() || process.GetNumThreads() == 0) {
            fail(result, "no process or core: attach to a process or load a core first (target create --core FILE)");
            return false;
        }
        std::string plugin = process.GetPluginName() ? process.GetPluginName() : "";
        bool live = plugin.find("core") == std::string::npos;

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
        std::map<int, int> indexOfLwp;
        for (uint32_t i = 0; i < process.GetNumThreads(); ++i) {
            lldb::SBThread thread = process.GetThreadAtIndex(i);
            OsThread t;
            t.lwp = static_cast<int>(thread.GetThreadID());
            lldb::SBFrame frame = thread.GetFrameAtIndex(0);
            if (auto fsBase = registerValue(frame, "fs_base")) t.threadPointer = t.pthread = *fsBase;
            t.registers = registers(frame);
            if (!t.registers.empty()) {
                t.pc = t.registers[hostArch().pcRegister];
                t.sp = t.registers[hostArch().spRegister];
            }
            // A core's first thread took the fatal signal (lldb's stop reason of each thread); in a
            // live process, the thread lldb stopped on a signal (DebuggerTarget keeps the fatal ones).
            if ((live ? !input.crash : i == 0) && thread.GetStopReason() == lldb::eStopReasonSignal &&
                thread.GetStopReasonDataCount() > 0) {
                CrashSignal c;
                c.lwp = t.lwp;
                c.signal = static_cast<int>(thread.GetStopReasonDataAtIndex(0));
                input.crash = c;
            }
            indexOfLwp[t.lwp] = static_cast<int>(thread.GetIndexID());
            input.threads.push_back(t);
        }
        auto aux = auxvOf(target, process, live);
        input.atPhdr = aux[AT_PHDR];
        input.atPhnum = aux[AT_PHNUM];
        input.atEntry = aux[AT_ENTRY];
        char path[4096] = "";
        if (target.GetExecutable().IsValid()) target.GetExecutable().GetPath(path, sizeof path);
        input.executable = path;
        input.pid = static_cast<int>(process.GetProcessID());
        input.live = live;
        DebuggerTarget pyTarget(input);
        CommandResult out = runCommand(pyTarget, request, [&](int lwp) {
            auto it = indexOfLwp.find(lwp);
            return it == indexOfLwp.end() ? 0 : it->second;
        });
        if (out.status == 2) {
            fail(result, out.error);
            return false;
        }
        result.Printf("%s", out.output.c_str());
        result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
        return true;
    }

    Command command_;
    std::string name_;
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
        {"py-tstates", Command::Tstates, "py-tstates [-j|--json] [-f|--frames N] [-n|--native] [-g|--greenlets]"},
        {"pybind-internals", Command::Internals, "pybind-internals [-j|--json] [-t|--types]"},
        {"py-tstates-check", Command::Check, "py-tstates-check [-j|--json] [-f|--frames N] [-n|--native] [-g|--greenlets]"},
    };
    static std::vector<std::string> helps;
    for (const auto& e : entries) helps.push_back(commandHelp(e.command));
    for (size_t i = 0; i < 3; ++i)
        interpreter.AddCommand(entries[i].name, new PytstatesCommand(entries[i].command, entries[i].name), helps[i].c_str(),
                               entries[i].syntax);
    return true;
}
