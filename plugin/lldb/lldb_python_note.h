// SPDX-License-Identifier: Apache-2.0
// Debian 12's lldb-14 ships a Python script interpreter that cannot start: `lldb -P` names
// /usr/lib/local/lib/python3.11/dist-packages, which does not exist, so lldb prints
// "ModuleNotFoundError: No module named 'lldb.embedded_interpreter'" when it starts and
// "NameError: name 'run_one_line' is not defined" at every `script`, before and after whatever
// else it prints. pytstates' plugin does not use lldb's Python; the note says so, once, at load.
#pragma once

#include <lldb/API/LLDB.h>

#include <string>

namespace pytstates::lldbfront {

// The note's line when this lldb's Python cannot find its lldb module; "" when it can.
std::string brokenPythonNote();

}  // namespace pytstates::lldbfront
