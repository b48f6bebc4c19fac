// SPDX-License-Identifier: Apache-2.0
#include "symbols/native/line_tables.h"

#include "symbols/native/source_line.h"

namespace pytstates {

namespace {
// Rows a second handle holds before it is closed (about 48 bytes a row in libdw 0.188): the CUs
// read again after that cost one more parse of their line programs.
constexpr size_t kMaxRows = 1 << 16;
}  // namespace

LineTables::~LineTables() {
    for (auto& [first, h] : handles_)
        if (h.dwarf) dwarf_end(h.dwarf);
}

bool LineTables::second(Dwarf_Die* cu, Dwarf_Die* out, Handle** handle) {
    Dwarf* first = cu ? dwarf_cu_getdwarf(cu->cu) : nullptr;
    if (!first) return false;
    Handle& h = handles_[first];
    if (!h.dwarf) {
        Elf* elf = dwarf_getelf(first);
        if (!elf) return false;
        h.dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
        if (!h.dwarf) return false;
        // A dwz file's strings and DIEs (forms *_alt) are read through the first handle's.
        if (Dwarf* alt = dwarf_getalt(first)) dwarf_setalt(h.dwarf, alt);
        h.rows = 0;
        h.cus.clear();
    }
    *handle = &h;
    return dwarf_offdie(h.dwarf, dwarf_dieoffset(cu), out) != nullptr;
}

void LineTables::account(Handle& h, Dwarf_Off cu, size_t rows) {
    if (!h.cus.emplace(cu, rows).second) return;
    h.rows += rows;
}

std::optional<SourcePosition> LineTables::at(Dwarf_Die* cu, Dwarf_Addr addr, bool* found) {
    *found = false;
    Dwarf_Die die;
    Handle* h = nullptr;
    if (!second(cu, &die, &h)) return std::nullopt;
    Dwarf_Lines* lines = nullptr;
    size_t count = 0;
    // No table here (one the first handle reads another way, as a .zdebug section it already
    // decompressed in place): the caller asks the first handle.
    if (dwarf_getsrclines(&die, &lines, &count) != 0) return std::nullopt;
    *found = true;
    account(*h, dwarf_dieoffset(&die), count);
    std::optional<SourcePosition> answer;
    auto addrOf = [&](size_t i) {
        Dwarf_Addr a = 0;
        dwarf_lineaddr(dwarf_onesrcline(lines, i), &a);
        return a;
    };
    if (count > 0) {
        // dwfl_module_getsrc's search: the last row at or below addr, unless it ends a sequence.
        size_t l = 0, u = count - 1;
        while (l < u) {
            size_t idx = u - (u - l) / 2;
            if (addr < addrOf(idx)) u = idx - 1;
            else l = idx;
        }
        Dwarf_Line* row = dwarf_onesrcline(lines, l);
        bool end = false;
        Dwarf_Addr rowAddr = addrOf(l);
        dwarf_lineendsequence(row, &end);
        if (row && !end && rowAddr <= addr) {
            // sourceLineAt's rule: no sequence may end between the row's first address and addr.
            bool ended = addr > rowAddr && sequenceEndsBetween(lines, count, rowAddr, addr);
            if (!ended) {
                SourcePosition p;
                int lineNo = 0;
                if (const char* f = dwarf_linesrc(row, nullptr, nullptr)) p.file = f;
                if (dwarf_lineno(row, &lineNo) == 0) p.line = lineNo;
                answer = p;
            }
        }
    }
    if (h->rows > kMaxRows) {
        dwarf_end(h->dwarf);
        h->dwarf = nullptr;
    }
    return answer;
}

std::optional<std::string> LineTables::fileName(Dwarf_Die* cu, Dwarf_Word index) {
    Dwarf_Die die;
    Handle* h = nullptr;
    if (!second(cu, &die, &h)) return std::nullopt;
    Dwarf_Files* files = nullptr;
    size_t count = 0;
    std::string name;
    if (dwarf_getsrcfiles(&die, &files, &count) != 0) return std::nullopt;  // as at(): the first handle answers
    if (index < count)
        if (const char* n = dwarf_filesrc(files, index, nullptr, nullptr)) name = n;
    // dwarf_getsrcfiles reads the whole line table too.
    Dwarf_Lines* lines = nullptr;
    size_t rows = 0;
    if (dwarf_getsrclines(&die, &lines, &rows) == 0) account(*h, dwarf_dieoffset(&die), rows);
    if (h->rows > kMaxRows) {
        dwarf_end(h->dwarf);
        h->dwarf = nullptr;
    }
    return name;
}

}  // namespace pytstates
