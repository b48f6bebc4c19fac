// SPDX-License-Identifier: Apache-2.0
// asyncio as the report tells it: each event loop with its tasks (suspended stacks, symbols/cpython/
// suspended_stack.h, rendered by commands/render/render_stacks with greenlets), and a deadlock's cycle of tasks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/asyncio_tasks.h"
#include "symbols/cpython/frames.h"

namespace pytstates {

// A loop's timers against the process's clock: how many are scheduled and, where the clock is
// known (a live process; a core records none), how many had fallen due by the snapshot.
struct LoopTimers {
    size_t scheduled = 0;               // not cancelled
    std::optional<size_t> due;          // _when <= the clock; none: no clock
    std::optional<double> mostOverdue;  // seconds since the earliest due one fell due
    std::optional<double> nextIn;       // seconds until the earliest not yet due falls due
};

struct EventLoopView {
    uint64_t loop = 0;
    uint64_t interp = 0;
    std::optional<int> lwp;  // the thread running it; none when not running
    uint64_t runningTask = 0;
    std::optional<size_t> ready;  // callbacks in its ready queue
    std::optional<LoopTimers> timers;  // none: unread
    std::vector<const AsyncioTask*> tasks;  // into Report::asyncio, in the order found
};

// One task of a deadlock through asyncio tasks: it waits for `object` (a task, or a lock held by
// `heldByTask`).
struct TaskCycleStep {
    uint64_t task = 0;
    std::string name;
    std::string waitsFor;  // StackWait::kind
    uint64_t object = 0;
    uint64_t heldByTask = 0;
    std::optional<PyFrame> at;  // its innermost frame outside asyncio's own code
};

}  // namespace pytstates
