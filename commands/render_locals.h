// SPDX-License-Identifier: Apache-2.0
// --locals as the renderers write them, one way for every frame: thread states', greenlets' and
// asyncio tasks' (render_text, render_json, render_tasks).
#pragma once

#include <sstream>
#include <string>

#include "commands/json_writer.h"
#include "symbols/cpython/frames.h"

namespace pytstates {

// JSON: the frame's "locals" key (value null where no short repr is safe).
void localsJson(JsonWriter& w, const PyFrame& f);

// Text: the frame's arguments, then its other locals, as pystack shows them (one per line, each
// value's text cut at kMaxLocalText characters when read); nothing when the frame's locals were not read.
void renderFrameLocals(std::ostringstream& out, const std::string& indent, const PyFrame& f);

}  // namespace pytstates
