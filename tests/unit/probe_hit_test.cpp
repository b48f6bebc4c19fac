// SPDX-License-Identifier: Apache-2.0
// Registers named once per machine (symbols/arch) and what a py-tstates-record hit keeps
// (commands/history/probe_hit), which every debugger front end reads through.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "commands/history/probe_hit.h"
#include "symbols/arch/arch.h"

using namespace pytstates;

TEST(ArchNames, DwarfOrderThreadPointerSyscall) {
    const Arch* x86 = archNamed("i386:x86-64");  // gdb's name
    ASSERT_NE(x86, nullptr);
    EXPECT_EQ(x86, archNamed("x86_64-pc-linux-gnu"));  // lldb's triple
    std::vector<std::string> names = x86->registerNames();
    ASSERT_EQ(names.size(), 17u);
    EXPECT_EQ(names[0], "rax");
    EXPECT_EQ(names[1], "rdx");
    EXPECT_EQ(names[7], "rsp");
    EXPECT_EQ(names[16], "rip");
    EXPECT_STREQ(x86->threadPointerRegister(), "fs_base");
    EXPECT_STREQ(x86->syscallRegister(), "orig_rax");
    EXPECT_STREQ(x86->argumentRegister(1), "rsi");
    EXPECT_EQ(x86->syscallFromRegisters(std::vector<uint64_t>(17, 7)), -1);  // orig_rax is not a DWARF register

    const Arch* a64 = archNamed("aarch64");
    ASSERT_NE(a64, nullptr);
    EXPECT_EQ(a64, archNamed("arm64"));
    EXPECT_EQ(archNamed("aarch64:ilp32"), nullptr);
    EXPECT_EQ(archNamed("riscv:rv64"), nullptr);
    names = a64->registerNames();
    ASSERT_EQ(names.size(), 33u);
    EXPECT_EQ(names[30], "x30");
    EXPECT_EQ(names[a64->spRegister], "sp");
    EXPECT_EQ(names[a64->pcRegister], "pc");
    EXPECT_STREQ(a64->threadPointerRegister(), "tpidr");
    EXPECT_EQ(a64->syscallRegister(), nullptr);
    std::vector<uint64_t> regs(33, 0);
    regs[8] = 98;  // x8: futex
    EXPECT_EQ(a64->syscallFromRegisters(regs), 98);
}

namespace {

struct FakeDebugger {
    std::map<std::string, uint64_t> registers;
    std::map<uint64_t, uint32_t> words;
    std::vector<uint64_t> frames;
    size_t walked = 0;

    HitReaders readers() {
        HitReaders r;
        r.readRegister = [this](const std::string& name) -> std::optional<uint64_t> {
            auto it = registers.find(name);
            if (it == registers.end()) return std::nullopt;
            return it->second;
        };
        r.readMemory = [this](uint64_t address, void* buffer, size_t length) {
            auto it = words.find(address);
            if (it == words.end() || length != 4) return false;
            std::memcpy(buffer, &it->second, 4);
            return true;
        };
        r.nextPc = [this]() -> std::optional<uint64_t> {
            if (walked >= frames.size()) return std::nullopt;
            return frames[walked++];
        };
        return r;
    }
};

}  // namespace

TEST(ProbeHit, TstateKeyAndDistinctPcs) {
    LifecycleProbe probe;
    probe.tstateRegister = "x1";
    probe.keyRegister = "x0";
    probe.keyOffset = 4;
    FakeDebugger d;
    d.registers = {{"x0", 0x1000}, {"x1", 0xabc0}};
    d.words = {{0x1004, 7}};
    d.frames = {0x10, 0x20, 0x20, 0x20, 0x30, 0x40, 0x50};  // 0x20 twice more: inlined calls
    auto hit = readProbeHit(probe, 4, d.readers());
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->tstate, 0xabc0u);
    ASSERT_TRUE(hit->key);
    EXPECT_EQ(*hit->key, 7u);
    EXPECT_EQ(hit->pcs, (std::vector<uint64_t>{0x10, 0x20, 0x30, 0x40}));
    EXPECT_EQ(d.walked, 6u);  // not a frame more than the four distinct pcs need
}

TEST(ProbeHit, UnreadableTstateIsNoHitUnreadableKeyIsNoKey) {
    LifecycleProbe probe;
    probe.tstateRegister = "rsi";
    probe.keyRegister = "rdi";
    FakeDebugger d;
    d.registers = {{"rdi", 0x2000}};
    EXPECT_FALSE(readProbeHit(probe, 4, d.readers()));
    d.registers["rsi"] = 0x5000;
    d.frames = {0x10};
    auto hit = readProbeHit(probe, 4, d.readers());
    ASSERT_TRUE(hit);
    EXPECT_FALSE(hit->key);  // nothing at rdi+0
    EXPECT_EQ(hit->pcs, std::vector<uint64_t>{0x10});
}

TEST(ProbeHit, EndlessWalkIsBounded) {
    LifecycleProbe probe;
    probe.tstateRegister = "rax";
    FakeDebugger d;
    d.registers = {{"rax", 1}};
    d.frames.assign(1000, 0x42);  // a debugger unwinding round a corrupt stack
    auto hit = readProbeHit(probe, 4, d.readers());
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->pcs, std::vector<uint64_t>{0x42});
    EXPECT_LE(d.walked, 40u);
}
