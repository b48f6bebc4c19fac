// SPDX-License-Identifier: Apache-2.0
// The words the text view gives Python's own state: thread names, each interpreter's state line,
// and a GIL wait during finalization.
#pragma once

#include <string>

#include "commands/analysis/report.h"

namespace pytstates {

// "  name \"worker-3\"" (Thread.name) or "  comm \"python3\"" (the kernel's); empty when none. A
// "MainThread" that threading named on a thread other than the process's first says so.
std::string threadNameWords(const Report& report, const ThreadRow& row);
// The same for a thread state's line: only a name Python gave the thread that runs it.
std::string tstateNameWords(const Report& report, uint64_t tstate);
// " \"worker-3\"" after a thread's label in CRASH, HANG and the findings: only a name Python gave it.
std::string lwpNameWords(const Report& report, int lwp);
// "state: finalizing (Py_FinalizeEx on LWP 12, thread state 0x...)  GC: collecting on LWP 12"; empty
// when the interpreter's state was not read.
std::string interpreterStateWords(const Report& report, const Interpreter& interp);
// What a GIL wait during finalization adds to the wait's words ("; its runtime is finalizing").
std::string finalizingWaitWords(const BlockedOn& b);

}  // namespace pytstates
