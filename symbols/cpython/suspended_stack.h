// SPDX-License-Identifier: Apache-2.0
// A Python stack that is not a thread's own: an asyncio task (the coroutines it awaits) or a
// greenlet. One model (its object, owner, state, frames, what it waits on) that each reader
// extends with its owner's own facts (AsyncioTask, GreenletInfo derive from it), read by one walker
// (symbols/cpython/stack_walker) and rendered by one renderer (commands/render/render_stacks).
// Here, neutral to both readers, rather than in commands/: the readers produce it directly, so there
// is no third type that commands/ would copy both into.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/frames.h"

namespace pytstates {

// What a stack waits on, where memory shows it (a pending asyncio task's fut_waiter, named by the
// asyncio frame that awaits it). A suspended greenlet waits on nothing memory shows: whoever switches
// to it resumes it (its parent is where it returns when it ends, not what it waits for).
struct StackWait {
    std::string kind;     // task|future|event|lock|condition|queue|semaphore|sleep|gather|other
    uint64_t object = 0;  // the object waited on (the Event, Lock, Queue; else the future)
    uint64_t future = 0;  // the task's fut_waiter
    uint64_t task = 0;    // kind task: the awaited task
};

struct SuspendedStack {
    uint64_t address = 0;  // the task or greenlet object
    uint64_t interp = 0;   // the interpreter whose collector lists it
    // Its owner, as memory shows it: the thread state whose live stack runs it (a running task), or
    // its OS thread (a greenlet, through its thread's greenlet state); 0 when unknown.
    uint64_t tstate = 0;
    int lwp = 0;
    // task: running|pending|done|cancelled|unknown; greenlet: running|suspended|dead|unstarted.
    std::string state;
    std::vector<PyFrame> frames;         // innermost first
    std::optional<StackWait> waitsOn;   // none: ready to run, running, done, or nothing shown
    std::string note;                    // why its frames are not (all) read
};

}  // namespace pytstates
