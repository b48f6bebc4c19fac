// SPDX-License-Identifier: Apache-2.0
// Which OS thread runs each thread state now, from evidence on that thread, and which made it.
#pragma once

#include <string>

#include "commands/analysis/report.h"

namespace pytstates {

// Fills report.places for every listed thread state, best evidence first:
//   current      CPython's current thread state of that thread (_Py_tss_tstate, 3.12+), or
//                gilstate.tstate_current (<= 3.11) where no stack evidence names its thread
//   cframe       tstate->cframe points into that thread's live stack (3.10-3.12: the eval loop's
//                local CFrame while the state runs; root_cframe, inside the state, when it does not)
//   entry_frame  one of its interpreter frames lies on that thread's live stack (3.12+: the eval
//                loop's entry frame)
//   eval_argument  an eval loop (_PyEval_EvalFrameDefault) on that thread's stack was handed one of
//                its frames: the frame argument, located by DWARF at that frame's pc (libpython's
//                DWARF at hand and not --no-dwarf), is on the state's Python stack
//   register / stack_word  a register or a word of that thread's live frames holds the pointer
//                (what PyEval_SaveThread returned, kept by Py_BEGIN_ALLOW_THREADS or
//                gil_scoped_release across a blocking call; the eval loop's own tstate)
//   maker_unverified  the maker, when that thread's stack cannot be read (no registers: --no-stop)
// A state none of these places is parked. The first three need no unwinding (a thread's stack
// extent comes from its registers); only the threads they leave unplaced are unwound and searched,
// and only while a state is left to place. Corrects ThreadRow::currentTstate for <= 3.11 (the
// process-wide pointer is the running thread's, not its maker's). stacks may be null.
void attributeRunners(const Target& target, NativeStacks* stacks, Report& report);

// "cframe" -> "its cframe is on that thread's stack", for the text view and messages.
std::string runnerEvidenceWords(const std::string& evidence);

}  // namespace pytstates
