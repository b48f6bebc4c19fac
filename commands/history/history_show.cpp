// SPDX-License-Identifier: Apache-2.0
#include "commands/history/history_show.h"

#include <cstdio>
#include <sstream>

#include "commands/render/text_encoding.h"
#include "symbols/text/base_name.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

std::string historyText(const HistoryLog& log, size_t maxEvents) {
    auto events = log.events();
    std::ostringstream out;
    out << "THREAD-STATE HISTORY (" << events.size() << " event" << (events.size() == 1 ? "" : "s") << " kept of " << log.recorded()
        << " recorded from " << log.hits() << " breakpoint hit" << (log.hits() == 1 ? "" : "s");
    if (log.dropped()) out << "; " << log.dropped() << " older ones dropped: the last " << log.limits().lifecyclePerTstate
                           << " lifecycle events and " << log.limits().usesPerTstate << " uses of each of at most "
                           << log.limits().tstates << " thread states are kept";
    out << ")\n";
    for (const auto& w : log.watched) out << "  watching " << shown(w) << "\n";
    for (const auto& c : log.cannot) out << "  not recorded: " << shown(c) << "\n";
    size_t first = maxEvents && events.size() > maxEvents ? events.size() - maxEvents : 0;
    for (size_t i = first; i < events.size(); ++i) {
        const auto& e = events[i];
        char head[160];
        std::snprintf(head, sizeof head, "  #%-6llu %9.3f ms  LWP %-7d %-8s %s", static_cast<unsigned long long>(e.seq), e.ms, e.lwp,
                      lifecycleEventName(e.event), hexAddress(e.tstate).c_str());
        out << head;
        if (e.key) out << "  key " << *e.key;
        out << "  " << shown(e.function);  // names from the target's files (or a saved history): escaped
        // The callers, skipping the CPython function the breakpoint is in.
        size_t callers = 0;
        for (size_t j = 0; j < e.frames.size() && callers < 4; ++j) {
            const auto& f = e.frames[j];
            if (j == 0 || (f.function == e.function && f.module == e.frames[0].module)) continue;
            out << " <- " << (f.function.empty() ? hexAddress(f.pc) : shown(f.function)) << " (" << (f.module.empty() ? "?" : shown(baseName(f.module))) << ")";
            ++callers;
        }
        out << "\n";
    }
    return out.str();
}

}  // namespace pytstates
