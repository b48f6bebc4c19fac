// SPDX-License-Identifier: Apache-2.0
// Where a long step says how far it is (decompressing a core, walking millions of objects,
// fetching from debuginfod): one line a front end may show while it runs and clear at the end.
// Nothing is told until a front end installs a sink; the CLI installs one only when stderr is a
// terminal. Not for facts: what a report says goes into the report.
#pragma once

#include <functional>
#include <string>

namespace pytstates {

using ProgressSink = std::function<void(const std::string& line)>;

// The sink (an empty function removes it).
void setProgressSink(ProgressSink sink);
bool progressWanted();
// `line` to the sink, at most ten times a second; callers build the line only when progressWanted().
void tellProgress(const std::string& line);

}  // namespace pytstates
