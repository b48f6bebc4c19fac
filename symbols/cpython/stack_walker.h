// SPDX-License-Identifier: Apache-2.0
// The one walker of suspended stacks (symbols/cpython/suspended_stack.h): how a greenlet's and an
// asyncio task's frames are read, through one FrameReader. A stack is read from its innermost frame
// through its callers (a suspended greenlet's saved frame; a running task or greenlet: its thread's
// top), or, a suspended coroutine's frames being linked to nothing, down its await chain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbols/cpython/frames.h"
#include "symbols/cpython/object_reader.h"

namespace pytstates {

class StackWalker {
public:
    StackWalker(const Memory& memory, const CPythonLayout& layout) : frames_(memory, layout), objects_(memory, layout) {}

    // From `innermost` through its callers, at most maxFrames, ending with `outermost` when met
    // (0: the whole chain). *note says why the walk ended early.
    std::vector<PyFrame> fromFrame(uint64_t innermost, uint64_t outermost, size_t maxFrames, std::string* note);
    // The thread state's stack, from its innermost frame to `outermost` (a running task's coroutine frame).
    std::vector<PyFrame> onThread(uint64_t tstate, uint64_t outermost, size_t maxFrames, std::string* note) {
        return fromFrame(frames_.topFrame(tstate), outermost, maxFrames, note);
    }

    // One coroutine (or generator) of an await chain with its frame.
    struct Await {
        uint64_t coro = 0, frame = 0;
        PyFrame shown;
        uint64_t awaited = 0;  // what the coroutine awaits (FrameReader::yieldFrom), 0 when none
    };
    // The await chain from `coro` inward, outermost first, at most maxLinks: each coroutine's frame
    // and the coroutine (or generator) it awaits, as CPython's _PyGen_yf finds it; it ends at a
    // finished one or at another object.
    std::vector<Await> awaitChain(uint64_t coro, size_t maxLinks);
    // Its frames as a stack's, innermost first, at most maxFrames: moved out of the chain (10,000
    // tasks' frames are not copied).
    static std::vector<PyFrame> framesOf(std::vector<Await>&& chain, size_t maxFrames);

    FrameReader& frames() { return frames_; }

private:
    FrameReader frames_;  // one per scan: it remembers code objects and line tables
    ObjectReader objects_;
};

}  // namespace pytstates
