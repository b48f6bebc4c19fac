// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/thread_registers.h"

#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace pytstates {

namespace {
constexpr unsigned kNtArmTls = 0x401;  // NT_ARM_TLS: tpidr_el0 (and, on newer kernels, tpidr2_el0)
}  // namespace

bool threadFromRegisterSets(const Arch& arch, const void* prReg, size_t prRegSize, const void* tls, size_t tlsSize, OsThread* t) {
    size_t words = arch.prRegToDwarf.size();
    if (prRegSize < words * 8) return false;
    std::vector<uint64_t> regs(words);
    std::memcpy(regs.data(), prReg, words * 8);
    t->registers = arch.registersFromPrReg(regs.data(), words);
    t->syscall = arch.syscallFromPrReg(regs.data(), words);
    t->pc = t->registers[arch.pcRegister];
    t->sp = t->registers[arch.spRegister];
    if (arch.prRegThreadPointer >= 0) t->threadPointer = regs[static_cast<size_t>(arch.prRegThreadPointer)];
    else if (tls && tlsSize >= 8) std::memcpy(&t->threadPointer, tls, 8);
    if (!arch.tlsVariantI) t->pthread = t->threadPointer;  // variant II: the thread pointer is the struct pthread
    return true;
}

bool readThreadRegisters(int tid, OsThread* t) {
    const Arch& arch = hostArch();
    uint64_t prReg[64] = {};  // larger than any machine's pr_reg
    iovec regs{prReg, sizeof prReg};
    if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &regs) != 0) return false;
    uint64_t tls[2] = {};
    iovec tlsSet{tls, sizeof tls};
    bool haveTls = arch.prRegThreadPointer < 0 && ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(kNtArmTls), &tlsSet) == 0;
    t->lwp = tid;
    return threadFromRegisterSets(arch, prReg, regs.iov_len, haveTls ? tls : nullptr, haveTls ? tlsSet.iov_len : 0, t);
}

int64_t procThreadSyscall(int pid, int tid) {
    std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall";
    std::ifstream in(path);
    std::string first;
    // "running", "-1 SP PC" (blocked outside a call) or "NR ARG1 ... ARG6 SP PC".
    if (!(in >> first) || first.empty() || first.find_first_not_of("0123456789") != std::string::npos) return -1;
    try {
        return std::stoll(first);
    } catch (const std::exception&) {
        return -1;
    }
}

}  // namespace pytstates
