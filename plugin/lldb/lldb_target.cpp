// SPDX-License-Identifier: Apache-2.0
#include "plugin/lldb/lldb_target.h"

#include <elf.h>

#include <cstring>
#include <fstream>

namespace pytstates::lldbfront {

std::optional<uint64_t> registerValue(lldb::SBFrame& frame, const char* name) {
    lldb::SBValue value = frame.FindRegister(name);
    if (!value.IsValid()) return std::nullopt;
    lldb::SBError e;
    uint64_t v = value.GetValueAsUnsigned(e, 0);
    if (!e.Success()) return std::nullopt;
    return v;
}

namespace {

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


// The registers of the target's machine as the library names them (DWARF order), and its thread
// pointer register: lldb's triple says the machine.
struct RegisterNames {
    std::vector<std::string> dwarf;
    std::string threadPointer;
    explicit RegisterNames(lldb::SBTarget target) {
        const char* triple = target.GetTriple();
        std::string machine = triple ? triple : "";
        std::string all = pytstates_register_names(machine.c_str());
        size_t start = 0;
        while (start < all.size()) {
            size_t end = all.find(' ', start);
            if (end == std::string::npos) end = all.size();
            if (end > start) dwarf.push_back(all.substr(start, end - start));
            start = end + 1;
        }
        threadPointer = pytstates_thread_pointer_register(machine.c_str());
    }
};

// The innermost frame's general registers in DWARF order, for the unwinder; empty when lldb lacks one.
std::vector<uint64_t> registersOf(lldb::SBFrame& frame, const RegisterNames& names) {
    std::vector<uint64_t> out;
    for (const auto& name : names.dwarf) {
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


}  // namespace

// A core leaves clean file pages out, and lldb's core reader does not fill them in:
// SBTarget::ReadMemory serves them from the module's file.
size_t LldbTarget::read(void* context, uint64_t addr, void* buf, size_t len) {
    auto* self = static_cast<LldbTarget*>(context);
    lldb::SBError e;
    size_t n = self->process.ReadMemory(addr, buf, len, e);
    if (e.Success() && n == len) return n;
    lldb::SBAddress where = self->target.ResolveLoadAddress(addr);
    if (!where.IsValid() || !where.GetSection().IsValid()) return e.Success() ? n : 0;
    lldb::SBError fileError;
    size_t fromFile = self->target.ReadMemory(where, buf, len, fileError);
    return fileError.Success() ? fromFile : (e.Success() ? n : 0);
}

LldbTarget::LldbTarget(lldb::SBTarget t, lldb::SBProcess p, bool live, bool withThreads) : process(p), target(t) {
    // lldb hands over no orig_rax: for a live process on this machine (the host platform, not
    // a remote lldb-server's) the library reads which call each blocked thread is in, and
    // the threads' names, from /proc.
    const char* platform = target.GetPlatform().GetName();
    bool local = live && process.GetProcessID() > 0 && platform && std::string(platform) == "host";
    bool haveCrash = false;
    RegisterNames names(target);
    for (uint32_t i = 0; withThreads && i < process.GetNumThreads(); ++i) {
        lldb::SBThread thread = process.GetThreadAtIndex(i);
        pytstates_thread row{};
        row.lwp = static_cast<int32_t>(thread.GetThreadID());
        row.debugger_number = static_cast<int32_t>(thread.GetIndexID());
        lldb::SBFrame frame = thread.GetFrameAtIndex(0);
        if (!names.threadPointer.empty())
            if (auto tp = registerValue(frame, names.threadPointer.c_str())) row.thread_pointer = *tp;
        row.syscall = local ? PYTSTATES_SYSCALL_UNKNOWN : -1;
        registers.push_back(registersOf(frame, names));
        // A core's first thread took the fatal signal (lldb's stop reason of each thread); in
        // a live process, the thread lldb stopped on a signal (the library keeps the fatal ones).
        if ((live ? !haveCrash : i == 0) && thread.GetStopReason() == lldb::eStopReasonSignal && thread.GetStopReasonDataCount() > 0) {
            crash.lwp = row.lwp;
            crash.signo = static_cast<int32_t>(thread.GetStopReasonDataAtIndex(0));
            crash.code = PYTSTATES_NO_SIGINFO;
            haveCrash = true;
        }
        threads.push_back(row);
    }
    for (size_t i = 0; i < threads.size(); ++i) {
        threads[i].registers = registers[i].data();
        threads[i].register_count = static_cast<uint32_t>(registers[i].size());
    }
    auto aux = auxvOf(target, process, live);
    if (!aux.count(AT_SYSINFO_EHDR)) aux[AT_SYSINFO_EHDR] = vdsoOf(target);
    for (const auto& [type, value] : aux) {
        auxv.push_back(type);
        auxv.push_back(value);
    }
    char path[4096] = "";
    if (target.GetExecutable().IsValid()) target.GetExecutable().GetPath(path, sizeof path);
    executable = path;
    debugDirs = debugFileSearchPaths(target.GetDebugger());
    for (const auto& d : debugDirs) debugDirPointers.push_back(d.c_str());
    input.context = this;
    input.read_memory = &LldbTarget::read;
    input.threads = threads.data();
    input.thread_count = threads.size();
    input.auxv = auxv.data();
    input.auxv_count = auxv.size() / 2;
    input.executable = executable.c_str();
    input.pid = static_cast<int32_t>(process.GetProcessID());
    input.live = live;
    input.local = local;
    input.sysroot = "";
    input.debug_dirs = debugDirPointers.data();
    input.debug_dir_count = debugDirPointers.size();
    input.crash = haveCrash ? &crash : nullptr;
}

std::vector<const char*> pointersTo(const std::vector<std::string>& args) {
    std::vector<const char*> out;
    for (const auto& a : args) out.push_back(a.c_str());
    return out;
}

}  // namespace pytstates::lldbfront
