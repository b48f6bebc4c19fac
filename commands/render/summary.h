// SPDX-License-Identifier: Apache-2.0
// The answer in one line, last in the text (a report scrolls its first screen away), and the
// exit status it implies.
#pragma once

#include <string>

#include "commands/render/render.h"
#include "commands/analysis/report.h"

namespace pytstates {

// 1 when the target crashed or aborted (a CRASH), hangs (a finding told under HANG) or has an
// error finding; else 0 (CONTRACT.md's exit-status table; 2 is the front end's: no report).
int reportExitStatus(const Report& report);

// "pytstates: CRASH SIGSEGV LWP 29634 — stale-tstate (1 error, 1 warning); exit 1", with a
// newline; at most options.width columns where it can.
std::string summaryLine(const Report& report, const RenderOptions& options);

}  // namespace pytstates
