// SPDX-License-Identifier: Apache-2.0
// A process's CLOCK_MONOTONIC read from outside it: ours, moved by the difference between its
// time namespace's offset and ours (/proc/PID/timens_offsets; a container may have its own).
#pragma once

#include <optional>

namespace pytstates {

// In seconds; nullopt when the offsets of a time namespace cannot be read (a process gone).
std::optional<double> processMonotonicNow(int pid);

}  // namespace pytstates
