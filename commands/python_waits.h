// SPDX-License-Identifier: Apache-2.0
// Python's own waits, from the Python frames once every thread's native wait is known
// (commands/waits): what a thread waiting on a threading.Lock waits for (a Condition, an Event, a
// Queue, a Semaphore, a join) and how its code names it, and who holds a lock that records no
// owner: another thread whose frame executes the body of `with <that lock>:` (with_blocks).
#pragma once

#include "commands/report.h"
#include "symbols/target.h"

namespace pytstates {

void readPythonWaits(const Target& target, const ReportOptions& options, Report& report);

}  // namespace pytstates
