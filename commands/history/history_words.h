// SPDX-License-Identifier: Apache-2.0
// A recorded history joined to the findings: every finding about one thread state (stale,
// foreign, shared, invalid GIL holder) gets that thread state's last life (created, cached,
// deleted, last used: who, on which thread, from which module and pybind11 record) as events
// and in one or two lines.
#pragma once

#include "commands/history/history_log.h"
#include "commands/analysis/report.h"

namespace pytstates {

void attachHistory(Report& report, const HistoryLog& log);
// The thread states attachHistory tells the history of (each once, in the findings' order).
std::vector<uint64_t> historyTstates(const Report& report);

}  // namespace pytstates
