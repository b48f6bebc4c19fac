// SPDX-License-Identifier: Apache-2.0
#include "symbols/debugger/debugger_target.h"

#include <csignal>

#include <map>

#include "symbols/core/signal_names.h"
#include "symbols/glibc/thread_list.h"
#include "symbols/live/process_files.h"


namespace pytstates {

DebuggerTarget::DebuggerTarget(DebuggerInput input)
    : input_(std::move(input)), cache_([this](uint64_t addr, void* buf, size_t len) {
          return input_.read ? input_.read(addr, buf, len) : 0;
      }) {
    for (auto& t : input_.threads)
        if (!t.pthread) t.pthread = t.threadPointer;  // x86_64
    ModuleDiscoveryInput in;
    in.memory = this;
    in.pristine = this;
    in.atPhdr = input_.atPhdr;
    in.atPhnum = input_.atPhnum;
    in.atEntry = input_.atEntry;
    in.mappings = input_.mappings;
    in.executable = input_.executable;
    in.search = input_.search;
    // A live process on this machine (search.processDir set by the front end): its files as
    // /proc names them, read through /proc/PID/map_files like the CLI's.
    if (!input_.search.processDir.empty() && input_.live && input_.pid > 0) {
        ProcessFiles files = readProcessFiles(input_.pid);
        if (!files.mappings.empty()) {
            root_ = files.root;
            namespacePids_ = files.namespacePids;
            if (in.mappings.empty()) in.mappings = std::move(files.mappings);
            if (!files.executable.empty()) in.executable = files.executable;
            procVisible_ = true;
        } else {
            in.search.processDir.clear();  // not a process we can see (another machine's pid)
        }
    }
    ModuleDiscovery found = discoverModules(in);
    executable_ = found.executable;
    modules_ = std::move(found.modules);
    warnings_ = std::move(found.warnings);
    for (const auto& m : modules_)
        if (m.path == executable_ && m.elf)
            if (const Arch* a = archForElfMachine(m.elf->machine())) arch_ = a;
    fillMissingThreadPointers();
}

// A debugger that cannot give a thread's fs_base (lldb 14 on cores) still lets us read memory:
// glibc's own thread lists give every thread's struct pthread with its tid.
void DebuggerTarget::fillMissingThreadPointers() {
    bool missing = false;
    for (const auto& t : input_.threads) missing = missing || !t.threadPointer;
    if (!missing) return;
    std::map<int, uint64_t> fromGlibc;
    for (const auto& t : threadsFromGlibcLists(*this)) fromGlibc[t.lwp] = t.threadPointer;
    size_t unknown = 0;
    for (auto& t : input_.threads) {
        if (t.threadPointer) continue;
        auto it = fromGlibc.find(t.lwp);
        if (it != fromGlibc.end())
            t.threadPointer = t.pthread = it->second;
        else
            ++unknown;
    }
    if (unknown) warnings_.push_back(std::to_string(unknown) + " thread(s) without a thread pointer: their TLS is not read");
}

std::optional<CrashSignal> DebuggerTarget::crashSignal() const {
    if (!input_.crash || !signalDumpsCore(input_.crash->signal)) return std::nullopt;
    // A live process the debugger holds stopped on a fatal signal is a crash as a core is; its
    // SIGTRAP is a breakpoint.
    if (input_.live && input_.crash->signal == SIGTRAP) return std::nullopt;
    return input_.crash;
}

size_t DebuggerTarget::read(uint64_t addr, void* buf, size_t len) const {
    countRead(len);
    return cache_.read(addr, buf, len);
}

std::optional<std::string> DebuggerTarget::threadComm(int lwp) const {
    if (!procVisible_ && !(input_.live && input_.localProcess && input_.pid > 0)) return std::nullopt;
    return readThreadComm(input_.pid, lwp);
}

}  // namespace pytstates
