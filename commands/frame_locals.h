// SPDX-License-Identifier: Apache-2.0
// --locals: each Python frame's arguments and locals (thread states' and greenlets' frames),
// as pystack's --locals shows them.
#pragma once

#include "commands/report.h"
#include "symbols/target.h"

namespace pytstates {

// Fills PyFrame::locals of every thread state's frame, or of every greenlet's saved frame, in
// the report (at most kMaxLocalsPerFrame per frame, each value's text at most kMaxLocalText
// characters).
enum class FrameLocalsOf { ThreadStates, Greenlets };
// Only the first maxFrames frames of each stack are shown (--native reads more, cut later).
void readFrameLocals(const Target& target, Report& report, FrameLocalsOf which, size_t maxFrames);

constexpr size_t kMaxLocalsPerFrame = 64;
constexpr size_t kMaxLocalText = 80;

}  // namespace pytstates
