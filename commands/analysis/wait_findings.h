// SPDX-License-Identifier: Apache-2.0
// The wait-for graph over threads[].blocked_on (a thread waiting for the GIL waits for its
// holder; for a mutex, rwlock or RLock, for its owner; in a join, for the joined thread; stopping
// the world, for an attached thread) and the findings it gives: deadlock (a cycle),
// gil-held-while-blocked and stop-the-world-blocked.
#pragma once

#include "commands/analysis/report.h"

namespace pytstates {

void addWaitFindings(Report& report);

}  // namespace pytstates
