// SPDX-License-Identifier: Apache-2.0
// What differs between the machines pytstates reads, each rule in one place: the registers of a
// thread as the kernel dumps them (NT_PRSTATUS's pr_reg, ptrace's user_regs) in DWARF numbering,
// their names, and where the thread pointer leads (the TLS variant).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pytstates {

enum class Machine { X86_64, AArch64 };

struct Arch {
    Machine machine;
    const char* name;                // "x86_64", "aarch64"
    uint16_t elfMachine;             // EM_X86_64, EM_AARCH64
    unsigned dwarfRegisters;         // DWARF numbers 0 .. dwarfRegisters-1 are filled from pr_reg
    unsigned pcRegister, spRegister; // DWARF numbers
    // struct elf_prstatus: its size, where pr_cursig, pr_pid and pr_reg are, and for each 8-byte
    // word of pr_reg its DWARF register number (-1: not a DWARF register).
    size_t prstatusSize, prstatusCursig, prstatusPid, prstatusRegs;
    std::vector<int> prRegToDwarf;
    int prRegThreadPointer;          // the word of pr_reg holding the thread pointer, -1: not there
    // The word of pr_reg holding the number of the system call the thread is in (x86_64:
    // orig_rax, -1 outside a call; aarch64: x8, the number the call was made with).
    int prRegSyscall;
    // TLS variant I (aarch64): the thread pointer points at the TCB, struct pthread lies just below
    // it; variant II (x86_64): the thread pointer is the struct pthread itself.
    bool tlsVariantI;

    // "rdi", "x0"; "r<N>" for a number without a name.
    std::string registerName(unsigned dwarf) const;
    // The names of DWARF registers 0 .. dwarfRegisters-1, as gdb and lldb name them: x86_64 rax
    // rdx rcx rbx rsi rdi rbp rsp r8-r15 rip; aarch64 x0-x30 sp pc.
    std::vector<std::string> registerNames() const;
    // The thread pointer as gdb and lldb name it: fs_base; tpidr (tpidr_el0, from NT_ARM_TLS).
    const char* threadPointerRegister() const;
    // A debugger's register holding the number of the system call a thread is in, when that is
    // not a DWARF register: x86_64 orig_rax; nullptr on aarch64 (gdb has no orig_x0 or syscallno:
    // the number is x8, among the DWARF registers, see syscallFromRegisters).
    const char* syscallRegister() const;
    // The system call's number from DWARF-ordered registers (aarch64: x8, as pr_reg gives it to
    // syscallFromPrReg); -1 when the machine keeps it elsewhere (x86_64's orig_rax) or none.
    int64_t syscallFromRegisters(const std::vector<uint64_t>& registers) const;
    // The register of the index-th integer argument at a function's entry (0-5: rdi rsi rdx rcx
    // r8 r9; x0-x5), and of the value a function returns (rax; x0).
    const char* argumentRegister(unsigned index) const;
    const char* returnRegister() const;
    // struct pthread of a thread, from its thread pointer (sizeofPthread: glibc's
    // _thread_db_sizeof_pthread, needed for variant I).
    uint64_t pthreadFromThreadPointer(uint64_t tp, uint64_t sizeofPthread) const;
    uint64_t threadPointerFromPthread(uint64_t pthread, uint64_t sizeofPthread) const;
    // DWARF-numbered registers from the words of pr_reg (or ptrace's user_regs, the same layout).
    std::vector<uint64_t> registersFromPrReg(const uint64_t* words, size_t count) const;
    // The system call's number from the words of pr_reg; -1 when there is none.
    int64_t syscallFromPrReg(const uint64_t* words, size_t count) const;
    // A return address as the code it returns to: aarch64 code built with pointer authentication
    // (Debian 13's arm64 packages: -mbranch-protection=standard) saves return addresses signed,
    // the signature in the bits above the user address space (Linux: 48 bits); x86_64 as is.
    uint64_t codeAddress(uint64_t returnAddress) const;
};

// The rules for an ELF e_machine; nullptr when the machine is not supported.
const Arch* archForElfMachine(uint16_t machine);
// The rules for a machine as a debugger or a user names it: "x86_64", gdb's "i386:x86-64", lldb's
// triple "x86_64-pc-linux-gnu", "amd64"; "aarch64", "arm64", "aarch64-unknown-linux-gnu".
// nullptr for any other.
const Arch* archNamed(const std::string& name);
const Arch& hostArch();

}  // namespace pytstates
