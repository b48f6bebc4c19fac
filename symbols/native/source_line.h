// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstddef>

namespace pytstates {

// The line-table row that covers pc, or nullptr. elfutils' dwfl_module_getsrc answers a pc past
// the end of a line sequence with that sequence's last row when its end_sequence row shares the
// row's address (seen on 0.188: _start, after main's CU, read as basic_string.h:795 where gdb and
// addr2line say none). A row is kept only if no sequence ends between it and pc; a line lost that
// way is missing, never wrong.
Dwfl_Line* sourceLineAt(Dwfl_Module* mod, Dwarf_Addr pc);

// That rule: whether a sequence of `lines` (a CU's table, sorted by address) ends at or after the
// first row at rowAddr and at or before target. A row it cannot read counts as no end.
bool sequenceEndsBetween(Dwarf_Lines* lines, size_t count, Dwarf_Addr rowAddr, Dwarf_Addr target);

}  // namespace pytstates
