// SPDX-License-Identifier: Apache-2.0
// The one renderer of what stacks share (a thread state's, a greenlet's, an asyncio task's:
// symbols/cpython/suspended_stack.h): the frames with file:line and, after --locals, each frame's
// arguments and locals under it, as text and JSON; and a stack's state in words.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "commands/render/json_writer.h"
#include "symbols/cpython/frames.h"

namespace pytstates {

// How a frame's line reads: numbered, "#0 wait (/usr/lib/python3.11/threading.py:320)" (a thread
// state's or a greenlet's stack), or as a step of an await tree, "wait  /srv/app/locks.py:12" (a
// task's, commands/render/render_tasks). Files by their whole path, as py-bt and pystack show them; cut
// at the front ("…/python3.11/threading.py", commands/render/text_layout's fitPath) only where the line
// would be wider than the text's width (0: no terminal, never cut).
enum class FrameLines { Numbered, Tree };

// One line per frame at `indent`, its locals (when read) 4 columns further in: the first
// shownFrames (--frames; SIZE_MAX: all), then a line saying how many are left out.
void renderFramesText(std::ostringstream& out, const std::string& indent, const std::vector<PyFrame>& frames, FrameLines style,
                      size_t width, size_t shownFrames);
// What a stack cut to shownFrames leaves out: "… 7 more frames: --frames"; with --frames 0,
// "(7 frames not shown: --frames 0)". frames > shownFrames.
std::string framesLeftOutWords(size_t frames, size_t shownFrames);
// before + "wait  /srv/app/locks.py:12": a frame as the await tree and the HANG lines about tasks
// name it, on a line of width columns.
std::string frameWhere(const std::string& before, const PyFrame& f, size_t width);
// before + "wait (/srv/app/locks.py:12)" + after: a frame named inside a line (the CRASH stack's
// Python frames, where a HANG's thread waits), on a line of width columns.
std::string frameCall(const std::string& before, const PyFrame& f, const std::string& after, size_t width);
// A stack's state as text says it: "unstarted" (a greenlet never switched to) is "not started".
std::string stateWords(const std::string& state);

// {"file", "function", "line"} and, when read, "locals".
void renderFrameJson(JsonWriter& w, const PyFrame& f);
// A stack's "frames": its first shownFrames (SIZE_MAX: all) and, when some are left out,
// "frames_not_shown": how many (the next key of the object, in the JSON's key order).
void renderFramesJson(JsonWriter& w, const std::vector<PyFrame>& frames, size_t shownFrames);

}  // namespace pytstates
