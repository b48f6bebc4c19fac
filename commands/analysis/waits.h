// SPDX-License-Identifier: Apache-2.0
// What each OS thread waits for (threads[].blocked_on), from its native stack unwound only as
// deep as the wait shows, and the lock's memory for its owner: the GIL's holder, a mutex's
// __owner, a write-locked rwlock's __cur_writer, the joined thread, an RLock's owner.
#pragma once

#include "commands/analysis/report.h"
#include "symbols/native/native_stacks.h"
#include "symbols/target.h"

namespace pytstates {

// After the thread rows and the runtimes are read; before the findings.
void readWaits(const Target& target, NativeStacks& stacks, const ReportOptions& options, Report& report);

}  // namespace pytstates
