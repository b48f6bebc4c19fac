// SPDX-License-Identifier: Apache-2.0
#include "symbols/native/sp_unwinder.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <algorithm>
#include <cstdlib>

namespace pytstates {

const SpUnwinder::Rule& SpUnwinder::ruleAt(uint64_t lookup) {
    auto known = rules_.find(lookup);
    if (known != rules_.end()) return known->second;
    Rule rule;
    const Arch& arch = target_.arch();
    // libdwfl tries the module's .eh_frame first, and keeps to it when it unwinds the frame.
    Dwfl_Module* mod = dwfl_ ? dwfl_addrmodule(dwfl_, lookup) : nullptr;
    Dwarf_Addr bias = 0;
    Dwarf_CFI* cfi = mod ? dwfl_module_eh_cfi(mod, &bias) : nullptr;
    Dwarf_Frame* frame = nullptr;
    if (cfi && dwarf_cfi_addrframe(cfi, lookup - bias, &frame) == 0) {
        bool signal = false;
        int ra = dwarf_frame_info(frame, nullptr, nullptr, &signal);
        Dwarf_Op* cfa = nullptr;
        size_t cfaOps = 0;
        Dwarf_Op raMem[3], spMem[3];
        Dwarf_Op* raOps = nullptr;
        Dwarf_Op* spOps = nullptr;
        size_t raN = 0, spN = 0;
        // The outermost frame (clone3, _start): its CFI leaves the return address undefined, and
        // libdwfl ends the stack there without an error.
        Dwarf_Op outerMem[3];
        Dwarf_Op* outerOps = nullptr;
        size_t outerN = 0;
        if (ra == static_cast<int>(arch.pcRegister) && !signal && dwarf_frame_register(frame, ra, outerMem, &outerOps, &outerN) == 0 &&
            outerN == 0 && outerOps == outerMem)  // (a null *ops would be "same value")
            rule.outermost = true;
        bool ok = ra == static_cast<int>(arch.pcRegister) && !signal && dwarf_frame_cfa(frame, &cfa, &cfaOps) == 0 &&
                  cfaOps == 1 && cfa[0].atom == DW_OP_bregx && cfa[0].number == arch.spRegister &&
                  dwarf_frame_register(frame, ra, raMem, &raOps, &raN) == 0 && raN == 2 &&
                  raOps[0].atom == DW_OP_call_frame_cfa && raOps[1].atom == DW_OP_plus_uconst &&
                  // The caller's stack pointer is the CFA itself (the ABI's DW_CFA_val_offset 0).
                  dwarf_frame_register(frame, static_cast<int>(arch.spRegister), spMem, &spOps, &spN) == 0 && spN == 2 &&
                  spOps[0].atom == DW_OP_call_frame_cfa && spOps[1].atom == DW_OP_stack_value;
        if (ok) {
            rule.simple = true;
            rule.cfaOffset = static_cast<int64_t>(cfa[0].number2);
            rule.raOffset = static_cast<int64_t>(raOps[1].number);
        }
        std::free(frame);
    }
    return rules_.emplace(lookup, rule).first->second;
}

std::optional<std::vector<SpUnwinder::Frame>> SpUnwinder::frames(const OsThread& thread, size_t count) {
    const Arch& arch = target_.arch();
    if (arch.machine != Machine::X86_64 || thread.registers.size() <= arch.spRegister || !thread.pc || count == 0)
        return std::nullopt;
    std::vector<Frame> out;
    out.reserve(std::min<size_t>(count, 64));
    Frame f{thread.pc, thread.registers[arch.spRegister], true};
    // The innermost frames' stack in one read; a word beyond it is read by itself.
    const uint64_t base = f.sp;
    uint64_t window[128];
    const size_t have = target_.readOnce(base, window, sizeof window) / sizeof(uint64_t);
    auto word = [&](uint64_t address) -> std::optional<uint64_t> {
        if (address >= base && (address - base) % sizeof(uint64_t) == 0 && (address - base) / sizeof(uint64_t) < have)
            return window[(address - base) / sizeof(uint64_t)];
        return target_.readValue<uint64_t>(address);
    };
    for (;;) {
        out.push_back(f);
        if (out.size() == count) return out;
        const Rule& rule = ruleAt(f.activation ? f.pc : f.pc - 1);
        if (rule.outermost) return out;
        if (!rule.simple) return std::nullopt;
        uint64_t cfa = f.sp + static_cast<uint64_t>(rule.cfaOffset);
        auto ra = word(cfa + static_cast<uint64_t>(rule.raOffset));
        if (!ra || *ra == 0) return std::nullopt;  // an end of the stack: libdwfl says which
        f = Frame{arch.codeAddress(*ra), cfa, false};  // signed by pointer authentication on aarch64
    }
}

}  // namespace pytstates
