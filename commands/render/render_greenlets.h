// SPDX-License-Identifier: Apache-2.0
// Greenlets (symbols/greenlet) as text and as JSON (runtimes[].greenlet, tstates[].greenlets): what is
// a greenlet's own (main, parent, type, the module read); their frames and states go through
// commands/render/render_stacks, as asyncio tasks' do (commands/render/render_tasks).
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>

#include "commands/render/json_writer.h"
#include "commands/analysis/report.h"

namespace pytstates {

// The runtime's greenlet module, and the greenlets under no thread state (each one when `list`).
// width: the text's (commands/render/render_stacks: a frame's path cut to fit it); shownFrames: the
// first frames of each saved stack shown (--frames).
void renderGreenletModule(std::ostringstream& out, const Report& report, const GreenletScan& scan, bool list, size_t width,
                          size_t shownFrames);
// Under a thread state: its thread's greenlets counted, and each one when `list`.
void renderTstateGreenlets(std::ostringstream& out, const GreenletScan& scan, int lwp, uint64_t interp, bool list, size_t width,
                           size_t shownFrames);

void renderGreenletScanJson(JsonWriter& w, const Report& report, const GreenletScan& scan, size_t shownFrames);
// tstates[].greenlets: the greenlets of the thread running the state, in its interpreter.
void renderTstateGreenletsJson(JsonWriter& w, const GreenletScan& scan, std::optional<int> lwp, uint64_t interp, size_t shownFrames);

}  // namespace pytstates
