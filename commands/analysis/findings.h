// SPDX-License-Identifier: Apache-2.0
// The checks docs/findings.md lists: every per-thread pointer held against the
// thread-state lists, the GIL, and the pybind11 records. They fill each finding's facts;
// commands/render/finding_words words them.
#pragma once

#include "commands/analysis/report.h"
#include "symbols/target.h"

namespace pytstates {

// All findings (check).
void addFindings(const Target& target, Report& report);
// Only those that need no TLS: multiple-runtimes (tstates, internals).
void addRuntimeFindings(Report& report);

}  // namespace pytstates
