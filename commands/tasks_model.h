// SPDX-License-Identifier: Apache-2.0
// Stacks that are not on a thread, as the report tells them: an asyncio task (and the coroutines
// it awaits) is a "suspended stack" with an owner, a state, its frames (innermost first) and what it
// waits on. One model, one renderer (commands/render_tasks): greenlets can move onto it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/asyncio_tasks.h"
#include "symbols/cpython/frames.h"

namespace pytstates {

struct SuspendedStack {
    std::string owner = "asyncio-task";  // what keeps it: "asyncio-task" ("greenlet" to come)
    uint64_t address = 0;
    uint64_t coroutine = 0;               // the coroutine (task_coro); 0 for a greenlet
    std::string name;
    std::string state;                    // running|pending|done|cancelled
    std::optional<int> lwp;               // running: the thread it runs on
    std::vector<PyFrame> frames;          // innermost first
    std::optional<AsyncioAwait> waitsOn;  // none: ready to run, running or done
    std::vector<uint64_t> awaitedBy;      // stacks that wait for it
    std::vector<uint64_t> holds;          // locks it holds (inside `async with`)
};

struct EventLoopView {
    uint64_t loop = 0;
    uint64_t interp = 0;
    std::optional<int> lwp;  // the thread running it; none when not running
    uint64_t runningTask = 0;
    std::optional<size_t> ready;  // callbacks in its ready queue
    std::vector<SuspendedStack> tasks;
};

// One task of a deadlock through asyncio tasks: it waits for `object` (a task, or a lock held by
// `heldByTask`).
struct TaskCycleStep {
    uint64_t task = 0;
    std::string name;
    std::string waitsFor;  // AsyncioAwait::kind
    uint64_t object = 0;
    uint64_t heldByTask = 0;
    std::optional<PyFrame> at;  // its innermost frame outside asyncio's own code
};

}  // namespace pytstates
