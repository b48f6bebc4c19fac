// SPDX-License-Identifier: Apache-2.0
// Linux signal numbers and si_code values as names and words (asm-generic numbering: x86_64 and
// aarch64 share it).
#pragma once

#include <string>

namespace pytstates {

// Signals whose default action writes a core: a core written for one of them is a crash.
bool signalDumpsCore(int signal);
// "SIGSEGV"; "signal 42" for a number without a name (real-time: "SIGRTMIN+N").
std::string signalName(int signal);
// "SEGV_MAPERR" for (SIGSEGV, 1); "SI_USER" for 0; empty when unknown.
std::string signalCodeName(int signal, int code);
// A few words on what the code means ("address not mapped"); empty when none.
std::string signalCodeWords(int signal, int code);

}  // namespace pytstates
