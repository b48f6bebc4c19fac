// SPDX-License-Identifier: Apache-2.0
// The capstone functions pytstates calls, from libcapstone opened at first use (see
// shared_library.h): only the recording of thread-state lifecycles disassembles.
#pragma once

#include <capstone/capstone.h>

#include <string>

namespace pytstates {

struct CapstoneCalls {
    decltype(&cs_open) open;
    decltype(&cs_option) option;
    decltype(&cs_disasm) disasm;
    decltype(&cs_disasm_iter) disasmIter;
    decltype(&cs_malloc) malloc;
    decltype(&cs_free) free;
    decltype(&cs_close) close;
};

// Null when libcapstone cannot be loaded; *why (if given) then says why.
const CapstoneCalls* capstone(std::string* why = nullptr);

}  // namespace pytstates
