// SPDX-License-Identifier: Apache-2.0
// --locals: each Python frame's arguments and locals (thread states', greenlets' and asyncio tasks' frames),
// as pystack's --locals shows them.
#pragma once

#include "commands/analysis/report.h"
#include "symbols/target.h"

namespace pytstates {

// Fills PyFrame::locals of every thread state's frame, of every greenlet's saved frame, or of
// every asyncio task's frame (its coroutine chain) in the report: every frame of each stack, as
// read (at most kMaxLocalsPerFrame per frame, each value's repr at most kMaxLocalText bytes:
// symbols/cpython/object_repr.h). No finding reads them; how many frames are shown is the
// renderer's (--frames).
enum class FrameLocalsOf { ThreadStates, Greenlets, Tasks };
void readFrameLocals(const Target& target, Report& report, FrameLocalsOf which);

constexpr size_t kMaxLocalsPerFrame = 64;
constexpr size_t kMaxLocalText = 1024;  // libpython.py's MAX_OUTPUT_LEN

}  // namespace pytstates
