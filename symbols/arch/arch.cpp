// SPDX-License-Identifier: Apache-2.0
#include "symbols/arch/arch.h"

#include <elf.h>

namespace pytstates {

namespace {

// x86_64: pr_reg is struct user_regs_struct (27 words): r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax
// rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs. DWARF numbers (System V
// psABI): rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8-r15 8-15, rip 16.
const Arch kX86_64 = {
    Machine::X86_64, "x86_64", EM_X86_64, 17, 16, 7,
    336, 12, 32, 112,
    {15, 14, 13, 12, 6, 3, 11, 10, 9, 8, 0, 2, 1, 4, 5, -1, 16, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1},
    21, 15, false};

// aarch64: pr_reg is struct user_pt_regs: x0-x30, sp, pc, pstate (34 words); DWARF x0-x30 0-30,
// sp 31, pc 32 (AArch64 DWARF ABI; libdwfl's backend passes pc as register 32). The thread
// pointer (tpidr_el0) is not in pr_reg: real kernels dump it as NT_ARM_TLS.
const Arch kAArch64 = {
    Machine::AArch64, "aarch64", EM_AARCH64, 33, 32, 31,
    392, 12, 32, 112,
    {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
     17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, -1},
    -1, 8, true};

const char* const kX86Names[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
                                 "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
const char* const kX86Arguments[] = {"rdi", "rsi", "rdx", "rcx", "r8", "r9"};
const char* const kAArch64Arguments[] = {"x0", "x1", "x2", "x3", "x4", "x5"};

}  // namespace

std::string Arch::registerName(unsigned dwarf) const {
    if (machine == Machine::X86_64 && dwarf < sizeof kX86Names / sizeof kX86Names[0]) return kX86Names[dwarf];
    if (machine == Machine::AArch64) {
        if (dwarf <= 30) return "x" + std::to_string(dwarf);
        if (dwarf == 31) return "sp";
        if (dwarf == 32) return "pc";
    }
    return "r" + std::to_string(dwarf);
}

std::vector<std::string> Arch::registerNames() const {
    std::vector<std::string> names;
    for (unsigned i = 0; i < dwarfRegisters; ++i) names.push_back(registerName(i));
    return names;
}

const char* Arch::threadPointerRegister() const { return machine == Machine::AArch64 ? "tpidr" : "fs_base"; }

const char* Arch::syscallRegister() const { return machine == Machine::X86_64 ? "orig_rax" : nullptr; }

int64_t Arch::syscallFromRegisters(const std::vector<uint64_t>& registers) const {
    if (prRegSyscall < 0 || static_cast<size_t>(prRegSyscall) >= prRegToDwarf.size()) return -1;
    int dwarf = prRegToDwarf[prRegSyscall];
    if (dwarf < 0 || static_cast<size_t>(dwarf) >= registers.size()) return -1;
    auto n = static_cast<int64_t>(registers[dwarf]);
    return n < 0 ? -1 : n;
}

const char* Arch::argumentRegister(unsigned index) const {
    if (index >= 6) return nullptr;
    return machine == Machine::AArch64 ? kAArch64Arguments[index] : kX86Arguments[index];
}

const char* Arch::returnRegister() const { return machine == Machine::AArch64 ? "x0" : "rax"; }

uint64_t Arch::pthreadFromThreadPointer(uint64_t tp, uint64_t sizeofPthread) const {
    if (!tp) return 0;
    return tlsVariantI ? tp - sizeofPthread : tp;
}

uint64_t Arch::threadPointerFromPthread(uint64_t pthread, uint64_t sizeofPthread) const {
    if (!pthread) return 0;
    return tlsVariantI ? pthread + sizeofPthread : pthread;
}

std::vector<uint64_t> Arch::registersFromPrReg(const uint64_t* words, size_t count) const {
    std::vector<uint64_t> regs(dwarfRegisters, 0);
    for (size_t i = 0; i < count && i < prRegToDwarf.size(); ++i)
        if (prRegToDwarf[i] >= 0 && static_cast<unsigned>(prRegToDwarf[i]) < dwarfRegisters) regs[prRegToDwarf[i]] = words[i];
    return regs;
}

int64_t Arch::syscallFromPrReg(const uint64_t* words, size_t count) const {
    if (prRegSyscall < 0 || static_cast<size_t>(prRegSyscall) >= count) return -1;
    auto n = static_cast<int64_t>(words[prRegSyscall]);
    return n < 0 ? -1 : n;
}

const Arch* archForElfMachine(uint16_t machine) {
    if (machine == EM_X86_64) return &kX86_64;
    if (machine == EM_AARCH64) return &kAArch64;
    return nullptr;
}

const Arch* archNamed(const std::string& name) {
    if (name.rfind("i386:x86-64", 0) == 0) return &kX86_64;  // gdb's, with ":intel" and the like after it
    std::string n = name.substr(0, name.find_first_of("-:"));  // a triple's first part; gdb's "aarch64:ilp32" is not LP64
    if (n != name && name[n.size()] == ':') return nullptr;
    if (n == "x86_64" || n == "amd64") return &kX86_64;
    if (n == "aarch64" || n == "arm64") return &kAArch64;
    return nullptr;
}

const Arch& hostArch() {
#if defined(__aarch64__)
    return kAArch64;
#else
    return kX86_64;
#endif
}

uint64_t Arch::codeAddress(uint64_t returnAddress) const {
    // Linux's user addresses have bit 55 clear; the signature takes bits 48..54 (and the top byte
    // with TBI), which no user code address uses with 48-bit virtual addresses, the kernel's default.
    if (machine != Machine::AArch64 || (returnAddress >> 55) & 1) return returnAddress;
    return returnAddress & ((uint64_t{1} << 48) - 1);
}

}  // namespace pytstates
