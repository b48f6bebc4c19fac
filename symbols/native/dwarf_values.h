// SPDX-License-Identifier: Apache-2.0
// The values of a frame's parameters from DWARF, the way a debugger's backtrace shows
// `take_gil (tstate=0x7f3a60000d10)`: each parameter's location evaluated at the frame's pc
// (registers, the frame base, memory), and DW_OP_entry_value through the caller's call site
// (`tstate@entry`). Pointer parameters only: they are what a finding can name.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "symbols/arch/arch.h"
#include "symbols/memory.h"
#include "symbols/native/native_stacks.h"

namespace pytstates {

struct FrameContext {
    const Arch* arch = nullptr;
    const Memory* memory = nullptr;
    std::vector<std::optional<uint64_t>> registers;  // by DWARF number, as unwound for this frame
    std::optional<uint64_t> cfa;                      // the caller's sp
    Dwarf_Addr dwarfBias = 0;                         // runtime address - DWARF address
    Dwarf_Addr pc = 0;                                // the DWARF address looked up (pc, or pc-1 for callers)
    // The caller, for values at function entry (DW_OP_entry_value): its call site is found by the
    // return address.
    bool haveCaller = false;
    Dwarf_Die callerSubprogram{};
    uint64_t callerReturnAddress = 0;
    std::vector<std::optional<uint64_t>> callerRegisters;
    std::optional<uint64_t> callerCfa;
    Dwarf_Addr callerDwarfBias = 0;
};

// Appends the pointer parameters of `scope` (a subprogram or inlined subroutine; `subprogram` gives
// the frame base) with the values they have at the frame's pc; for a pointer to a structure holding a
// PyThreadState* member (pybind11's gil_scoped_acquire), that member too ("this->tstate").
void parameterValues(const FrameContext& frame, Dwarf_Die scope, Dwarf_Die subprogram, std::vector<FrameValue>* out);

// The call site in `scope` (a function, searched through its blocks and inlined calls) whose
// return address is `returnPc` (a DWARF address): DW_TAG_call_site or GCC's DW_TAG_GNU_call_site.
bool findCallSite(Dwarf_Die* scope, Dwarf_Addr returnPc, Dwarf_Die* out);
// The function a call site calls (DW_AT_call_origin / DW_AT_abstract_origin); false when unnamed.
bool callSiteOrigin(Dwarf_Die* site, Dwarf_Die* out);
// Every tail call site in `scope` (DW_AT_call_tail_call / DW_AT_GNU_tail_call).
std::vector<Dwarf_Die> tailCallSites(Dwarf_Die* scope);
// A call site's return address (DWARF address): DW_AT_call_return_pc, or DW_AT_low_pc for GCC's.
std::optional<Dwarf_Addr> callSiteReturnPc(Dwarf_Die* site);

}  // namespace pytstates
