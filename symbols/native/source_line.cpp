// SPDX-License-Identifier: Apache-2.0
#include "symbols/native/source_line.h"

#include <elfutils/libdw.h>

namespace pytstates {

Dwfl_Line* sourceLineAt(Dwfl_Module* mod, Dwarf_Addr pc) {
    Dwfl_Line* line = dwfl_module_getsrc(mod, pc);
    if (!line) return nullptr;
    Dwarf_Addr bias = 0;
    Dwarf_Line* row = dwfl_dwarf_line(line, &bias);
    Dwarf_Die* cu = dwfl_linecu(line);
    Dwarf_Addr rowAddr = 0;
    Dwarf_Lines* lines = nullptr;
    size_t count = 0;
    if (!row || !cu || dwarf_lineaddr(row, &rowAddr) != 0 || dwarf_getsrclines(cu, &lines, &count) != 0) return line;
    Dwarf_Addr target = pc - bias;
    if (target <= rowAddr) return line;
    return sequenceEndsBetween(lines, count, rowAddr, target) ? nullptr : line;
}

bool sequenceEndsBetween(Dwarf_Lines* lines, size_t count, Dwarf_Addr rowAddr, Dwarf_Addr target) {
    // The table is sorted by address: the first row at rowAddr, then every row up to target.
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        Dwarf_Addr a = 0;
        if (dwarf_lineaddr(dwarf_onesrcline(lines, mid), &a) != 0) return false;
        if (a < rowAddr) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < count; ++i) {
        Dwarf_Line* l = dwarf_onesrcline(lines, i);
        Dwarf_Addr a = 0;
        bool end = false;
        if (!l || dwarf_lineaddr(l, &a) != 0 || a > target) break;
        if (dwarf_lineendsequence(l, &end) == 0 && end) return true;
    }
    return false;
}

}  // namespace pytstates
