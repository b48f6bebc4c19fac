// SPDX-License-Identifier: Apache-2.0
// asyncio in the report (--tasks): the event loops with their tasks as suspended stacks, and the
// findings tasks make (a deadlock through tasks and asyncio locks, an event loop blocked by a task).
#pragma once

#include <vector>

#include "commands/analysis/report.h"

namespace pytstates {

// A loop's timers (their _when, sorted) against the process's clock (none: a core's).
LoopTimers loopTimers(const std::vector<double>& whens, std::optional<double> clock);

// A loop's thread whose Python frames are not read (a core without its stack's bytes), no task of
// the loop running, waiting in a poll of the kernel: asyncio-loop, said as taken so. (With frames,
// commands/analysis/python_waits tells it from selectors.py's select under _run_once.)
void markIdleLoops(Report& report);

// Every event loop of every runtime, its tasks in the order found.
std::vector<EventLoopView> eventLoopViews(const Report& report);

// deadlock (a cycle of tasks awaiting tasks or asyncio locks another task of the cycle holds) and
// event-loop-blocked (the loop's thread, running a task or a callback, is blocked in something
// other than the loop's selector).
void addTaskFindings(Report& report);

// A cycle step's kind that is a future only a task's end completes (a gather's, a shield's, ...:
// TaskAwaitEdge's via), rather than a task or a lock.
bool awaitsThroughFuture(const std::string& kind);

// The thread running a loop: the one running its thread state, else the one whose pthread_t the
// loop's _thread_id is; nullopt when neither is known.
std::optional<int> loopLwp(const Report& report, const AsyncioLoop& loop);

// The innermost frame outside asyncio's own modules (where the program waits); nullopt if none.
std::optional<PyFrame> programFrame(const std::vector<PyFrame>& frames);

}  // namespace pytstates
