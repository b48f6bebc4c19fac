// SPDX-License-Identifier: Apache-2.0
// The debugger commands' answers (plugin/engine/pytstates.h, pytstates_view_ask), worded once for
// gdb, lldb-19's Python and lldb-14's C++ plugin: each a JSON object whose "text" is what the
// command prints, every string read from the target escaped for a terminal.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/analysis/debugger_view.h"

namespace pytstates {

struct BtOptions {
    bool native = false;  // the thread's native stack with the Python frames merged in
    bool locals = false;  // each frame's locals under it
    bool full = false;    // locals, and each frame's interpreter-frame and code addresses
    // The debugger's frame number of each eval-loop frame, innermost first (its `frame N`):
    // each Python frame's line names its C frame. Empty: not named.
    std::vector<long long> evalLevels;
    // native: the debugger's frames (its number, pc), innermost first: each native frame is numbered
    // as the debugger numbers it (its pc matched in order); empty: as pytstates unwinds them.
    std::vector<std::pair<long long, uint64_t>> debuggerFrames;
    std::optional<size_t> selected;  // the selected Python frame: marked with '*'
    std::string sysroot;             // where source files are read first
};

// "LWP 7084 \"worker\": thread state 0x... of interpreter 0, holds the GIL"
std::string stackHeader(const ThreadStack& s);
nlohmann::json frameJson(const ViewFrame& f);
nlohmann::json stackAnswer(const ThreadStack& s);
nlohmann::json btAnswer(DebuggerView& view, const ThreadStack& s, const BtOptions& options);
// One frame's line (and its source line) as pyt frame, up and down print it; its fields as stack's frames.
nlohmann::json frameAnswer(const ViewFrame& f, const BtOptions& options);
nlohmann::json localsAnswer(const ViewFrame& f, const std::vector<ViewLocal>& locals);
nlohmann::json printAnswer(const ViewName& found);
nlohmann::json listAnswer(const ViewFrame& f, const std::vector<std::string>& lines, int start);
nlohmann::json tstateAnswer(const Report& report, const TstateFacts& t);
nlohmann::json interpreterAnswer(const Report& report, const Interpreter& interp);
nlohmann::json objectAnswer(uint64_t address, const ObjectFacts& o);
nlohmann::json foundThreadAnswer(const Report& report, const FoundThread& found);
nlohmann::json gilHolderAnswer(const Report& report);

// 'x' not found: print's error, as libpython.py's py-print says it.
std::string notFoundWords(const std::string& name);

}  // namespace pytstates
