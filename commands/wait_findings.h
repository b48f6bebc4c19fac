// SPDX-License-Identifier: Apache-2.0
// The wait-for graph over threads[].blocked_on (a thread waiting for the GIL waits for its
// holder; for a mutex, rwlock or RLock, for its owner; in a join, for the joined thread) and the
// findings it gives: deadlock (a cycle) and gil-held-while-blocked.
#pragma once

#include "commands/report.h"

namespace pytstates {

void addWaitFindings(Report& report);

// "waits for the GIL", "waits for mutex 0x...": the words for one step of a wait.
std::string waitWords(WaitKind kind, uint64_t object, const std::string& call);

}  // namespace pytstates
