// SPDX-License-Identifier: Apache-2.0
// The live front end's register sets (PTRACE_GETREGSET) read by each machine's rules: aarch64's
// pr_reg (x0-x30, sp, pc, pstate) and NT_ARM_TLS (tpidr_el0), x86_64's user_regs_struct (fs_base
// among the general registers). This machine can only run its own; the aarch64 path is checked
// on register sets laid out as the arm64 kernel gives them (arch/arm64/include/uapi/asm/ptrace.h:
// struct user_pt_regs), and the whole live target is compiled for aarch64 by tests/arm64.
#include <gtest/gtest.h>

#include <elf.h>

#include <cstdint>
#include <vector>

#include "symbols/live/thread_registers.h"

using namespace pytstates;

TEST(ThreadRegisters, Aarch64FromUserPtRegsAndArmTls) {
    const Arch* arch = archForElfMachine(EM_AARCH64);
    ASSERT_NE(arch, nullptr);
    std::vector<uint64_t> regs(34);
    for (size_t i = 0; i < 31; ++i) regs[i] = 0x1000 + i;  // x0..x30
    regs[31] = 0x7ffff000;                                   // sp
    regs[32] = 0x400123;                                     // pc
    regs[33] = 0x60000000;                                   // pstate
    uint64_t tls[2] = {0x5501fde8a0, 0};                     // tpidr_el0, tpidr2_el0
    OsThread t;
    ASSERT_TRUE(threadFromRegisterSets(*arch, regs.data(), regs.size() * 8, tls, sizeof tls, &t));
    EXPECT_EQ(t.pc, 0x400123u);
    EXPECT_EQ(t.sp, 0x7ffff000u);
    EXPECT_EQ(t.threadPointer, 0x5501fde8a0u);
    EXPECT_EQ(t.pthread, 0u) << "variant I: struct pthread needs glibc's size, left to the caller";
    ASSERT_GE(t.registers.size(), 32u);
    EXPECT_EQ(t.registers[0], 0x1000u);   // DWARF 0 = x0
    EXPECT_EQ(t.registers[30], 0x101eu);  // DWARF 30 = x30 (lr)
    // glibc's _thread_db_sizeof_pthread on arm64: 1856 in Debian 12's 2.36, 1824 in Debian 13's 2.41
    EXPECT_EQ(arch->pthreadFromThreadPointer(t.threadPointer, 1856), 0x5501fde8a0u - 1856);
    EXPECT_EQ(arch->pthreadFromThreadPointer(t.threadPointer, 1824), 0x5501fde8a0u - 1824);
}

TEST(ThreadRegisters, Aarch64WithoutArmTls) {
    const Arch* arch = archForElfMachine(EM_AARCH64);
    std::vector<uint64_t> regs(34, 1);
    OsThread t;
    ASSERT_TRUE(threadFromRegisterSets(*arch, regs.data(), regs.size() * 8, nullptr, 0, &t));
    EXPECT_EQ(t.threadPointer, 0u);
    EXPECT_FALSE(threadFromRegisterSets(*arch, regs.data(), 8, nullptr, 0, &t)) << "a short register set";
}

TEST(ThreadRegisters, X86_64FsBaseIsTheThreadPointerAndPthread) {
    const Arch* arch = archForElfMachine(EM_X86_64);
    ASSERT_NE(arch, nullptr);
    std::vector<uint64_t> regs(27, 0);  // struct user_regs_struct
    regs[16] = 0x401000;                // rip
    regs[19] = 0x7ffe0000;              // rsp
    regs[21] = 0x7f0000001740;          // fs_base
    OsThread t;
    ASSERT_TRUE(threadFromRegisterSets(*arch, regs.data(), regs.size() * 8, nullptr, 0, &t));
    EXPECT_EQ(t.pc, 0x401000u);
    EXPECT_EQ(t.sp, 0x7ffe0000u);
    EXPECT_EQ(t.threadPointer, 0x7f0000001740u);
    EXPECT_EQ(t.pthread, 0x7f0000001740u);
}
