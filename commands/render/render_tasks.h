// SPDX-License-Identifier: Apache-2.0
// asyncio's event loops and tasks (--tasks) as text (an await tree per loop) and as JSON
// (event_loops[], docs/report.schema.json), and the findings about tasks as the HANG section tells them.
#pragma once

#include <sstream>

#include "commands/render/json_writer.h"
#include "commands/analysis/report.h"

namespace pytstates {

// "ASYNCIO ..." with one await tree per event loop (showTree, --tasks), else one line counting the
// loops and tasks (none when there are none); nothing when the tasks were not read. width: the
// text's (commands/render/render_stacks: a frame's path cut to fit it).
void renderTasksText(std::ostringstream& out, const Report& report, size_t width, bool showTree);
// The HANG lines of a deadlock through tasks and of an event loop blocked by a task; true when any.
bool renderTaskHang(std::ostringstream& out, const Report& report, bool color, size_t width);
// True when a task is stuck (a finding about tasks): the tree is then shown above the thread list.
bool tasksStuck(const Report& report);
// Nothing: what --tasks could not read is in warnings[] ("asyncio: ..."), as the schema has it.
void renderTasksJsonNotes(JsonWriter& w, const Report& report);
void renderTasksJson(JsonWriter& w, const Report& report);
// A deadlock's cycle of tasks: findings[].cycle's entries.
void renderTaskCycleJson(JsonWriter& w, const Finding& f);
// A loop's timers: {"due", "most_overdue_s", "next_in_s", "scheduled"} (due null: no clock, a core's),
// or null when they were not read.
void loopTimersJson(JsonWriter& w, const std::optional<LoopTimers>& timers);

}  // namespace pytstates
