// SPDX-License-Identifier: Apache-2.0
// Every finding code, once: its name, severity, family and what the rest of the tool does with it.
// The JSON, the text, the man page's list (held against this table by a unit test) and history's
// matching read it; nothing else names a code by its string (as elfutils keeps DWFL_ERRORS).
#pragma once

#include <array>
#include <cstddef>

namespace pytstates {

enum class FindingCode {
    StaleTstate,
    TlsMismatch,
    ForeignTstate,
    SharedTstate,
    InvalidGilHolder,
    OrphanTstate,
    GilstateOtherInterpreter,
    InternalsSplit,
    InternalsIstateMismatch,
    MultipleRuntimes,
    GreenletBadFrame,
    GreenletFrameOnThread,
    Deadlock,
    GilHeldWhileBlocked,
    StopTheWorldBlocked,
    EventLoopBlocked,
};

enum class Severity { Error, Warning, Info };

enum class FindingFamily { ThreadState, Pybind11, Runtime, Waits, Greenlet, Asyncio };

// What a finding is about.
enum class FindingSubject {
    Tstate,    // one thread-state pointer (and the thread whose slot holds it, when one does)
    Thread,    // what one thread's slots say about each other
    Greenlet,  // one suspended greenlet
    Waiters,   // one blocked thread and the threads that wait for it (`waiters`)
    Cycle,     // the threads of a wait-for cycle (`cycle`)
    Records,   // pybind11 internals records
    Runtimes,  // copies of CPython
    Task,      // an asyncio task on the thread that runs its loop (`lwp`, `task`)
};

// Which crashes a finding can explain.
enum class AbortTie {
    None,
    OnItsThread,  // an abort in a thread-state check on the thread the finding names
    AnyThread,    // an abort in a thread-state check on any thread (the GIL is every thread's)
};

struct FindingCodeInfo {
    FindingCode code;
    const char* name;         // "stale-tstate": the JSON's code and the text's column
    Severity severity;
    FindingFamily family;
    FindingSubject subject;
    bool history;             // a recorded history (--history) tells its thread state's last life
    bool crashValue;          // a crashing frame's parameter, register or stack word equal to its tstate explains the crash
    AbortTie abortTie;
    bool hang;                // the text tells it in HANG, and gives its sources ("from ...") under FINDINGS
    const char* when;         // docs/findings.md's one line
};

constexpr size_t kFindingCodeCount = static_cast<size_t>(FindingCode::EventLoopBlocked) + 1;

// The table, one entry per code in FindingCode's order.
const std::array<FindingCodeInfo, kFindingCodeCount>& findingCodes();

const FindingCodeInfo& findingInfo(FindingCode code);
const char* findingName(FindingCode code);
Severity findingSeverity(FindingCode code);
const char* severityName(Severity severity);  // "error", "warning", "info"

}  // namespace pytstates
