// SPDX-License-Identifier: Apache-2.0
// Python's own waits, from the Python frames once every thread's native wait is known
// (commands/analysis/waits): what a thread waiting on a threading.Lock waits for (a Condition, an Event, a
// Queue, a Semaphore, a join) and how its code names it, and who holds a lock that records no
// owner: another thread whose frame executes the body of `with <that lock>:` (with_blocks).
#pragma once

#include <memory>

#include "commands/analysis/report.h"
#include "symbols/target.h"

namespace pytstates {

class PythonWaits {
public:
    // Reads every thread's with-blocks (the objects each holds), before the native waits are read.
    PythonWaits(const Target& target, const ReportOptions& options, Report& report);
    ~PythonWaits();
    // Some thread's frame holds an object by a with-block: a plain Lock's waiter may find its holder.
    bool anyHeld() const;
    // Once the native waits are read: kinds, names, and holders by with-block.
    void run();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace pytstates
