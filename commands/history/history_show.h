// SPDX-License-Identifier: Apache-2.0
// py-tstates-record show: the recorded events, one line each, oldest first.
#pragma once

#include <string>

#include "commands/history/history_log.h"

namespace pytstates {

// maxEvents: the newest N (0: all).
std::string historyText(const HistoryLog& log, size_t maxEvents = 0);

}  // namespace pytstates
