// SPDX-License-Identifier: Apache-2.0
// The C ABI of libpytstates.so.0 (pytstates.h) over the C++ engine: a debugger's target becomes
// a DebuggerTarget, a command runs on it, the output goes back malloc'ed. Every entry point
// catches everything: a C++ exception must never unwind into a C caller, Python or a debugger.
#include "plugin/engine/pytstates.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/history/history_show.h"
#include "commands/history/recording.h"
#include "commands/run.h"
#include "commands/view.h"
#include "commands/version.h"
#include "symbols/arch/arch.h"
#include "symbols/debugger/debugger_target.h"
#include "symbols/live/thread_registers.h"

using namespace pytstates;

namespace {

char* copyOut(const std::string& text) {
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    if (!out) return nullptr;
    std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
    return out;
}

void setOut(char** where, const std::string& text) {
    if (where) *where = copyOut(text);
}

std::string str(const char* text) { return text ? text : ""; }

Command commandNamed(const std::string& name) {
    if (name == "internals") return Command::Internals;
    if (name == "check") return Command::Check;
    return Command::Tstates;
}

// The machine whose DWARF register count the debugger gave (optionally followed by the system
// call's number, as gdb's front end appends orig_rax); nullptr when no machine has that many.
const Arch* archOfRegisters(size_t count, bool* trailingSyscall) {
    for (const char* name : {"x86_64", "aarch64"}) {
        const Arch* arch = archNamed(name);
        if (count == arch->dwarfRegisters || count == arch->dwarfRegisters + 1) {
            *trailingSyscall = arch->syscallRegister() && count == arch->dwarfRegisters + 1;
            if (count == arch->dwarfRegisters + 1 && !arch->syscallRegister()) continue;
            return arch;
        }
    }
    return nullptr;
}

bool validThread(const pytstates_thread& t) { return t.register_count == 0 || t.registers; }

// What the debugger knows of the process, as the engine takes it. withThreads false: none.
DebuggerInput inputOf(const pytstates_target& target, bool withThreads = true) {
    DebuggerInput input;
    if (target.read_memory) {
        auto read = target.read_memory;
        void* context = target.context;
        input.read = [read, context](uint64_t addr, void* buf, size_t len) -> size_t {
            size_t n = read(context, addr, buf, len);
            return n > len ? len : n;
        };
    }
    bool local = target.live && target.local && target.pid > 0;
    for (size_t i = 0; withThreads && target.threads && i < target.thread_count; ++i) {
        const pytstates_thread& from = target.threads[i];
        if (!validThread(from)) continue;
        OsThread t;
        t.lwp = from.lwp;
        t.threadPointer = from.thread_pointer;  // struct pthread from it: DebuggerTarget, per machine
        t.syscall = from.syscall == PYTSTATES_SYSCALL_UNKNOWN ? -1 : from.syscall;
        bool trailing = false;
        if (const Arch* arch = archOfRegisters(from.register_count, &trailing)) {
            t.registers.assign(from.registers, from.registers + arch->dwarfRegisters);  // pc, sp: DebuggerTarget
            if (trailing && from.syscall == -1 && static_cast<int64_t>(from.registers[arch->dwarfRegisters]) >= 0)
                t.syscall = static_cast<int64_t>(from.registers[arch->dwarfRegisters]);
        }
        if (from.syscall == PYTSTATES_SYSCALL_UNKNOWN && local) t.syscall = procThreadSyscall(target.pid, t.lwp);
        input.threads.push_back(t);
    }
    if (target.crash) {
        const pytstates_signal& s = *target.crash;
        CrashSignal c;
        c.lwp = s.lwp;
        c.signal = s.signo;
        if (s.code != PYTSTATES_NO_SIGINFO) {
            c.haveSiginfo = true;
            c.code = s.code;
            if (s.code > 0) c.faultAddress = s.address;
            if (s.code <= 0) {
                c.senderPid = s.sender_pid;
                c.senderUid = s.sender_uid;
            }
        }
        input.crash = c;
    }
    std::map<uint64_t, uint64_t> aux;
    for (size_t i = 0; target.auxv && i < target.auxv_count; ++i) aux.emplace(target.auxv[2 * i], target.auxv[2 * i + 1]);
    auto value = [&](uint64_t type) {
        auto it = aux.find(type);
        return it == aux.end() ? uint64_t(0) : it->second;
    };
    input.atPhdr = value(3);          // AT_PHDR
    input.atPhnum = value(5);         // AT_PHNUM
    input.atEntry = value(9);         // AT_ENTRY
    input.atSysinfoEhdr = value(33);  // AT_SYSINFO_EHDR: the vDSO, named from its image
    input.executable = str(target.executable);
    input.pid = target.pid;
    input.live = target.live != 0;
    input.search.sysroot = str(target.sysroot);
    for (size_t i = 0; target.debug_dirs && i < target.debug_dir_count; ++i)
        if (target.debug_dirs[i] && *target.debug_dirs[i]) input.search.debugDirs.emplace_back(target.debug_dirs[i]);
    if (local) {
        input.search.processDir = "/proc/" + std::to_string(target.pid);  // this machine's process: its files as /proc names them
        input.localProcess = true;
    }
    return input;
}

std::vector<std::string> argumentsOf(const char* const* args, size_t count) {
    std::vector<std::string> out;
    for (size_t i = 0; args && i < count; ++i) out.push_back(str(args[i]));
    return out;
}

// The recording py-tstates-record keeps between commands (one per process: one debugger session).
std::mutex recordingMutex;
std::unique_ptr<Recording> recording;

int failWith(char** error, const std::string& why) {
    setOut(error, why.empty() ? "internal error" : why);
    return 2;
}

}  // namespace

// One stop of a debugger's target and the analysis of it (commands/view).
struct pytstates_view {
    std::unique_ptr<ViewSession> session;
};

extern "C" {

int pytstates_run(const char* command, const char* const* args, size_t arg_count, const pytstates_target* target, char** output,
                  char** error) {
    if (output) *output = nullptr;
    if (error) *error = nullptr;
    try {
        CommandRequest request;
        request.command = commandNamed(str(command));
        std::string why;
        if (!parseCommandArguments(argumentsOf(args, arg_count), &request, &why)) return failWith(error, why);
        if (!target) return 0;  // the arguments alone were checked
        {
            std::lock_guard<std::mutex> lock(recordingMutex);
            if (recording && !recording->log()->empty()) request.history = recording->log();
        }
        std::map<int, int> numbers;
        for (size_t i = 0; target->threads && i < target->thread_count; ++i)
            numbers[target->threads[i].lwp] = target->threads[i].debugger_number;
        DebuggerTarget debugged(inputOf(*target));
        CommandResult result = runCommand(debugged, request, [&numbers](int lwp) {
            auto it = numbers.find(lwp);
            return it == numbers.end() ? 0 : it->second;
        });
        if (result.status == 2) return failWith(error, result.error);
        setOut(output, result.output);
        return result.status;
    } catch (const std::exception& e) {
        return failWith(error, e.what());
    } catch (...) {
        return failWith(error, "internal error");
    }
}

const char* pytstates_version(void) { return PYTSTATES_VERSION_STRING; }

char* pytstates_help(const char* command) {
    try {
        return copyOut(commandHelp(commandNamed(str(command))));
    } catch (...) {
        return copyOut("");
    }
}

const char* pytstates_register_names(const char* machine) {
    try {
        static const std::map<const Arch*, std::string> names = [] {
            std::map<const Arch*, std::string> out;
            for (const char* name : {"x86_64", "aarch64"}) {
                const Arch* arch = archNamed(name);
                std::string list;
                for (const auto& r : arch->registerNames()) list += (list.empty() ? "" : " ") + r;
                out[arch] = list;
            }
            return out;
        }();
        auto it = names.find(archNamed(str(machine)));
        return it == names.end() ? "" : it->second.c_str();
    } catch (...) {
        return "";
    }
}

const char* pytstates_thread_pointer_register(const char* machine) {
    try {
        const Arch* arch = archNamed(str(machine));
        return arch ? arch->threadPointerRegister() : "";
    } catch (...) {
        return "";
    }
}

const char* pytstates_syscall_register(const char* machine) {
    try {
        const Arch* arch = archNamed(str(machine));
        return arch && arch->syscallRegister() ? arch->syscallRegister() : "";
    } catch (...) {
        return "";
    }
}

int pytstates_record_on(const char* const* args, size_t arg_count, const pytstates_target* target, char** text, char** probes_json,
                        int* frames, char** error) {
    if (text) *text = nullptr;
    if (probes_json) *probes_json = nullptr;
    if (error) *error = nullptr;
    try {
        HistoryLog::Limits limits;
        int perHit = 4;
        std::string why;
        if (!parseRecordOptions(argumentsOf(args, arg_count), &limits, &perHit, &why)) return failWith(error, why);
        if (!target) {
            setOut(text, armedText(false));
            return 1;
        }
        pytstates_target liveTarget = *target;
        liveTarget.live = 1;
        liveTarget.crash = nullptr;
        DebuggerTarget debugged(inputOf(liveTarget));
        std::unique_ptr<Recording> next;
        try {
            next = std::make_unique<Recording>(debugged, limits, perHit);
        } catch (const NoCPythonYet& e) {
            setOut(text, armedText(true));
            setOut(error, e.what());
            return 1;
        }
        nlohmann::json probes = nlohmann::json::array();
        for (const auto& p : next->plan().probes)
            probes.push_back({{"address", p.address}, {"event", lifecycleEventName(p.event)}, {"tstate_register", p.tstateRegister},
                              {"key_register", p.keyRegister}, {"key_offset", p.keyOffset}});
        std::string started = next->startText();
        {
            std::lock_guard<std::mutex> lock(recordingMutex);
            recording = std::move(next);
        }
        setOut(text, started);
        setOut(probes_json, probes.dump());
        if (frames) *frames = perHit;
        return 0;
    } catch (const std::exception& e) {
        return failWith(error, e.what());
    } catch (...) {
        return failWith(error, "internal error");
    }
}

const char* pytstates_record_hooks(void) {
    try {
        static const std::string names = [] {
            std::string out;
            for (const auto& name : lifecycleCreators()) out += (out.empty() ? "" : " ") + name;
            return out;
        }();
        return names.c_str();
    } catch (...) {
        return "";
    }
}

void pytstates_record_hit(size_t probe, uint64_t tstate, int32_t lwp, int64_t key, const uint64_t* pcs, size_t pc_count) {
    try {
        std::lock_guard<std::mutex> lock(recordingMutex);
        if (!recording) return;
        std::optional<uint32_t> k;
        if (key >= 0) k = static_cast<uint32_t>(key);
        std::vector<uint64_t> frames;
        if (pcs) frames.assign(pcs, pcs + pc_count);
        recording->hit(probe, tstate, lwp, k, std::move(frames));
    } catch (...) {
    }
}

int pytstates_record_hit_from(size_t probe, int32_t lwp, const pytstates_hit_readers* readers) {
    try {
        if (!readers) return 0;
        HitReaders from;
        from.readRegister = [readers](const std::string& name) -> std::optional<uint64_t> {
            uint64_t value = 0;
            if (!readers->read_register || !readers->read_register(readers->context, name.c_str(), &value)) return std::nullopt;
            return value;
        };
        from.readMemory = [readers](uint64_t address, void* buffer, size_t length) {
            return readers->read_memory && readers->read_memory(readers->context, address, buffer, length) == length;
        };
        from.nextPc = [readers]() -> std::optional<uint64_t> {
            uint64_t pc = 0;
            if (!readers->next_pc || !readers->next_pc(readers->context, &pc)) return std::nullopt;
            return pc;
        };
        std::lock_guard<std::mutex> lock(recordingMutex);
        if (!recording) return 0;
        return recording->hitFrom(probe, lwp, from) ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

int pytstates_record_output(const char* what, const char* argument, const pytstates_target* target, char** output, char** error) {
    if (output) *output = nullptr;
    if (error) *error = nullptr;
    try {
        std::shared_ptr<HistoryLog> log;
        {
            std::lock_guard<std::mutex> lock(recordingMutex);
            if (recording) log = recording->log();
        }
        if (!log) return failWith(error, "nothing recorded: py-tstates-record on first");
        if (target && target->thread_count > 0) {
            DebuggerTarget debugged(inputOf(*target));
            log->nameFrames(debugged);
        }
        std::string arg = str(argument);
        if (str(what) == "show") {
            size_t last = 0;
            std::string why;
            if (!arg.empty() && !parseShowCount(arg, &last, &why)) return failWith(error, why);
            setOut(output, historyText(*log, last));
            return 0;
        }
        if (str(what) != "save") return failWith(error, "expected show [N] or save FILE");
        setOut(output, saveHistory(*log, arg));
        return 0;
    } catch (const std::exception& e) {
        return failWith(error, e.what());
    } catch (...) {
        return failWith(error, "internal error");
    }
}

void pytstates_record_stats(uint64_t out[4]) {
    if (!out) return;
    out[0] = out[1] = out[2] = out[3] = 0;
    try {
        std::lock_guard<std::mutex> lock(recordingMutex);
        if (!recording) return;
        auto log = recording->log();
        out[0] = log->hits();
        out[1] = log->recorded();
        out[2] = log->events().size();
        out[3] = log->dropped();
    } catch (...) {
    }
}

void pytstates_record_name(const pytstates_target* target) {
    try {
        std::shared_ptr<HistoryLog> log;
        {
            std::lock_guard<std::mutex> lock(recordingMutex);
            if (recording) log = recording->log();
        }
        if (!log || !target) return;
        pytstates_target liveTarget = *target;
        liveTarget.live = 1;
        DebuggerTarget debugged(inputOf(liveTarget, false));
        log->nameFrames(debugged);
    } catch (...) {
    }
}

char* pytstates_record_status(int32_t armed, size_t breakpoints) {
    try {
        std::lock_guard<std::mutex> lock(recordingMutex);
        return copyOut(recordStatusText(armed != 0, breakpoints, recording ? recording->log().get() : nullptr));
    } catch (...) {
        return copyOut("");
    }
}

char* pytstates_record_help(void) {
    try {
        return copyOut(recordHelp());
    } catch (...) {
        return copyOut("");
    }
}


int pytstates_view_open(const pytstates_target* target, const char* const* args, size_t arg_count, pytstates_view** view, char** error) {
    if (view) *view = nullptr;
    if (error) *error = nullptr;
    try {
        if (!target || !view) return failWith(error, "no target");
        auto debugged = std::make_shared<DebuggerTarget>(inputOf(*target));
        std::string why;
        auto session = ViewSession::open(debugged, argumentsOf(args, arg_count), &why);
        if (!session) return failWith(error, why);
        *view = new pytstates_view{std::move(session)};
        return 0;
    } catch (const std::exception& e) {
        return failWith(error, e.what());
    } catch (...) {
        return failWith(error, "internal error");
    }
}

int pytstates_view_ask(pytstates_view* view, const char* question, char** answer, char** error) {
    if (answer) *answer = nullptr;
    if (error) *error = nullptr;
    try {
        if (!view || !view->session) return failWith(error, "no view");
        std::string out, why;
        if (view->session->ask(str(question), &out, &why) != 0) return failWith(error, why);
        setOut(answer, out);
        return 0;
    } catch (const std::exception& e) {
        return failWith(error, e.what());
    } catch (...) {
        return failWith(error, "internal error");
    }
}

void pytstates_view_close(pytstates_view* view) {
    try {
        delete view;
    } catch (...) {
    }
}

void pytstates_free(void* pointer) { std::free(pointer); }

}  // extern "C"
