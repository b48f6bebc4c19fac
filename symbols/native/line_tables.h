// SPDX-License-Identifier: Apache-2.0
// Source lines and file names of a module's CUs, read through a second libdw handle over the same
// debug file that is closed (and its line tables freed) once it holds many rows. libdw keeps every
// CU's whole line table for the handle's lifetime: 13.5 MB for the 14 CUs a 1,000-thread
// python3.11 core's stacks cross (LTO units of thousands of functions), where a lookup needs one row.
#pragma once

#include <elfutils/libdw.h>

#include <map>
#include <optional>
#include <string>

namespace pytstates {

struct SourcePosition {
    std::string file;  // empty when the row names none
    int line = 0;
};

class LineTables {
public:
    LineTables() = default;
    ~LineTables();
    LineTables(const LineTables&) = delete;
    LineTables& operator=(const LineTables&) = delete;

    // The row of cu's line table that covers addr (a DWARF address), as dwfl_module_getsrc and
    // sourceLineAt (source_line.h) answer it; nullopt when none does. `found` false: the second
    // handle could not be opened, did not find the CU or could not read its line table (the
    // caller asks libdwfl instead).
    std::optional<SourcePosition> at(Dwarf_Die* cu, Dwarf_Addr addr, bool* found);
    // Entry `index` of cu's file table (DW_AT_call_file), as dwarf_filesrc names it; nullopt when
    // the second handle cannot answer.
    std::optional<std::string> fileName(Dwarf_Die* cu, Dwarf_Word index);

private:
    struct Handle {
        Dwarf* dwarf = nullptr;
        size_t rows = 0;  // line rows it holds
        std::map<Dwarf_Off, size_t> cus;  // CUs whose table it read, and their rows
    };
    // cu's DIE in the second handle over cu's file; false when there is none.
    bool second(Dwarf_Die* cu, Dwarf_Die* out, Handle** handle);
    void account(Handle& h, Dwarf_Off cu, size_t rows);
    std::map<Dwarf*, Handle> handles_;  // by the first handle
};

}  // namespace pytstates
