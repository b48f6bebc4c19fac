// SPDX-License-Identifier: Apache-2.0
// Every asyncio event loop and task of a CPython runtime, read from memory: tasks are found on the
// collector's lists (every _asyncio.Task is tracked), the loop each thread runs from its thread
// state (its dict: <= 3.11 a running-loop holder, 3.12+ the loop; else the loop's _thread_id), each suspended task's
// coroutine chain through the awaited object its frame keeps on its value stack (FrameReader::
// yieldFrom, 3.9-3.13), and what it waits
// on from its fut_waiter and the asyncio frame that waits (Event.wait, Lock.acquire, Queue.get,
// sleep, gather); who awaits each task (3.14+: CPython's own fut_awaited_by; before, from the done
// callbacks of gather, shield, wait, wait_for and TaskGroup) and whom each pending task waits for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/asyncio_layout.h"
#include "symbols/cpython/frames.h"
#include "symbols/cpython/runtimes.h"
#include "symbols/cpython/suspended_stack.h"
#include "symbols/target.h"

namespace pytstates {

// A task a pending task cannot resume before: it awaits it (via "task"), or a future only its end
// completes: a gather's (via "gather", also through a gather of gathers), a shield's outer future
// ("shield"), asyncio.wait's waiter with ALL_COMPLETED or one future left ("wait"), wait_for's
// waiter up to 3.11 ("wait_for"), a TaskGroup's exit ("taskgroup"). `future` is the one it awaits.
struct TaskAwaitEdge {
    uint64_t task = 0;
    std::string via;
    uint64_t future = 0;
};

// A task as a suspended stack: tstate is the thread state whose stack runs its coroutine (running);
// frames its coroutine chain, innermost first; waitsOn what a pending one waits on. state "ready":
// pending, not running, and its next step is queued (the future it awaited is done, or it awaits none).
struct AsyncioTask : SuspendedStack {
    uint64_t loop = 0;
    uint64_t coro = 0;
    std::string name;                   // whole, up to kMaxTaskName characters
    bool nameCut = false;               // longer than kMaxTaskName: cut there
    // Tasks that await it, as CPython 3.14's `python -m asyncio pstree` has them: 3.14+ its
    // fut_awaited_by; before, derived from the objects (asyncio_tasks.cpp: TaskLinks)
    std::vector<uint64_t> awaitedBy;
    std::vector<TaskAwaitEdge> waitsFor;  // pending: the tasks it cannot resume before
    std::vector<uint64_t> holds;        // asyncio locks a frame of it is inside `async with` of
};

// A task name longer than this (characters) is cut there (nameCut).
constexpr size_t kMaxTaskName = size_t(1) << 20;

struct AsyncioLoop {
    uint64_t address = 0;
    uint64_t interp = 0;
    uint64_t tstate = 0;  // the thread state running it; 0: not running
    uint64_t threadIdent = 0;  // BaseEventLoop._thread_id: the pthread_t of the thread running it; 0: None or unread
    uint64_t runningTask = 0;
    std::optional<size_t> ready;  // len(loop._ready): callbacks ready to run; none when unread
    // When each of its timers falls due (loop._scheduled's TimerHandles not cancelled, their _when)
    // on the loop's clock, time.monotonic(); none when unread.
    std::optional<std::vector<double>> timers;
    std::vector<size_t> tasks;    // indexes into AsyncioScan::tasks
};

struct AsyncioScan {
    size_t runtimeIndex = 0;
    std::string layoutSource;
    std::string problem;  // why tasks are not (all) read; empty when none
    std::vector<AsyncioLoop> loops;
    std::vector<AsyncioTask> tasks;
    size_t gcObjects = 0;
    // The process's CLOCK_MONOTONIC at the snapshot (Target::monotonicNow): a live process's; none
    // for a core, which records no clock.
    std::optional<double> clock;
};

// A file of asyncio's own package (.../asyncio/locks.py): where a task waits inside asyncio, not
// in the program (whose own files may sit in a directory named asyncio too).
bool isAsyncioFile(const std::string& file);

// nullopt when the runtime has no asyncio in use (no _asyncio module loaded and no task found).
std::optional<AsyncioScan> scanAsyncio(const Target& target, const Runtime& runtime, size_t runtimeIndex,
                                       const AsyncioLayout& layout);

}  // namespace pytstates
