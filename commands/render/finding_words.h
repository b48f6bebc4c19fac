// SPDX-License-Identifier: Apache-2.0
// The words of the findings, in one place: each code's message from the finding's typed facts, and
// its sources one line each (the JSON's "message" and "sources", the text's lines). The analyses
// (commands/analysis/findings, commands/analysis/wait_findings) fill the facts and write no sentence.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "commands/analysis/report.h"

namespace pytstates {

// What is wrong, where (thread, address, which source), and the likely cause.
std::string findingMessage(const Finding& f);

// Every source of the finding, one line each.
std::vector<std::string> findingSourceLines(const Finding& f);

// One source in words ("pybind11 key 2 (__pybind11_internals_v4_...)").
std::string sourceWords(const FindingSource& s);

// "waits for the GIL", "waits for mutex 0x...": the words for one step of a wait.
std::string waitWords(WaitKind kind, uint64_t object, const std::string& call);
// The same after "would": "wait for mutex 0x...", "block in read()".
std::string waitWouldWords(WaitKind kind, uint64_t object, const std::string& call);

// " held by LWP 12", or for a stop of the world ", waiting for LWP 12 to detach"; "" for nobody.
std::string heldByWords(WaitKind kind, const std::optional<int>& heldBy);

// Python's own waits (commands/analysis/python_waits): " `second`" or ", a wait on Event 0x... `self._ready`"
// after a Python lock's words; "" when the frames said nothing.
std::string pythonWaitWords(const std::string& kind, uint64_t object, const std::string& name);
// " by a with-block at file.py:22 (take)" after heldByWords for a holder its with-block shows.
std::string holderWords(const std::string& evidence, const std::optional<PyFrame>& at, int withLine, const std::string& name);
// A thread's wait in full: its kind and object, the Python words, its holder and the holder's evidence.
std::string blockedOnWords(const BlockedOn& b);
// What the memory at a thread-state pointer in no list shows ("its memory now holds ...").
std::string tstateMemoryWords(const TstateMemory& m);
// The one line that ties a crash to the findings that explain it (CrashReport::tie): "the crash is
// most likely the stale-tstate below: take_gil (frame #0) was handed tstate=0x..., which pybind11
// key 2 (...) still names on this thread"; empty when nothing ties them.
std::string crashExplanationWords(const Report& report);

// What waits on an event loop: "2 callbacks ready to run, 3 timers scheduled, 1 due (the earliest
// 4.031 s ago)"; a core's timers: "3 timers scheduled (a core records no clock: ...)".
std::string loopWaitingWords(const std::optional<size_t>& ready, const std::optional<LoopTimers>& timers);

}  // namespace pytstates
