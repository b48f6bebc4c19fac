// SPDX-License-Identifier: Apache-2.0
// --locals: each Python frame's arguments and locals (thread states', greenlets' and asyncio tasks' frames),
// as pystack's --locals shows them.
#pragma once

#include "commands/analysis/report.h"
#include "symbols/target.h"

namespace pytstates {

// Fills PyFrame::locals of every thread state's frame, of every greenlet's saved frame, or of
// every asyncio task's frame (its coroutine chain, shown whole: maxFrames does not cut it) in
// the report (at most kMaxLocalsPerFrame per frame, each value's repr at most kMaxLocalText
// bytes: symbols/cpython/object_repr.h).
enum class FrameLocalsOf { ThreadStates, Greenlets, Tasks };
// Only the first maxFrames frames of each stack are shown (--native reads more, cut later).
void readFrameLocals(const Target& target, Report& report, FrameLocalsOf which, size_t maxFrames);

constexpr size_t kMaxLocalsPerFrame = 64;
constexpr size_t kMaxLocalText = 1024;  // libpython.py's MAX_OUTPUT_LEN

}  // namespace pytstates
