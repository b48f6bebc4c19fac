// SPDX-License-Identifier: Apache-2.0
// The one renderer of what stacks share (a thread state's, a greenlet's, an asyncio task's:
// symbols/cpython/suspended_stack.h): the frames with file:line and, after --locals, each frame's
// arguments and locals under it, as text and JSON; and a stack's state in words.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "commands/json_writer.h"
#include "symbols/cpython/frames.h"

namespace pytstates {

// How a frame's line reads: numbered, "#0 wait (locks.py:12)" (a thread state's or a greenlet's
// stack), or as a step of an await tree, "wait  locks.py:12" (a task's, commands/render_tasks).
enum class FrameLines { Numbered, Tree };

// One line per frame at `indent`, its locals (when read) 4 columns further in.
void renderFramesText(std::ostringstream& out, const std::string& indent, const std::vector<PyFrame>& frames, FrameLines style);
// "wait  locks.py:12": a frame as the await tree and the HANG lines about tasks name it.
std::string frameWhere(const PyFrame& f);
// A stack's state as text says it: "unstarted" (a greenlet never switched to) is "not started".
std::string stateWords(const std::string& state);

// {"file", "function", "line"} and, when read, "locals".
void renderFrameJson(JsonWriter& w, const PyFrame& f);
void renderFramesJson(JsonWriter& w, const std::vector<PyFrame>& frames);

}  // namespace pytstates
