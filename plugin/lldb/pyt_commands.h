// SPDX-License-Identifier: Apache-2.0
// The pyt commands in lldb: `pyt bt|bt-full|up|down|frame|list|locals|print|tstate|thread`
// (a multiword command) and their hyphen aliases (pyt-bt, ...), each a question to the view of
// the current stop (stop_view.h), answered in the engine's words; and the type summaries of
// PyThreadState *, PyInterpreterState * and PyObject *.
#pragma once

#include <lldb/API/LLDB.h>

namespace pytstates::lldbfront {

void addPytCommands(lldb::SBDebugger debugger);
void addTypeSummaries(lldb::SBDebugger debugger);

}  // namespace pytstates::lldbfront
