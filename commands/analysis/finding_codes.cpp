// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/finding_codes.h"

namespace pytstates {

namespace {

using C = FindingCode;
using S = Severity;
using F = FindingFamily;
using N = FindingSubject;
using A = AbortTie;

// code, name, severity, family, subject, history, crashValue, abortTie, hang, when
constexpr std::array<FindingCodeInfo, kFindingCodeCount> kTable = {{
    {C::StaleTstate, "stale-tstate", S::Error, F::ThreadState, N::Tstate, true, true, A::OnItsThread, false,
     "a per-thread pointer (CPython's current tstate, its autoTSSkey slot, a pybind11 internals TLS slot, a GIL holder) names a "
     "PyThreadState that is in no interpreter's thread list"},
    {C::TlsMismatch, "tls-mismatch", S::Error, F::ThreadState, N::Thread, false, true, A::OnItsThread, false,
     "on one thread, two live TLS sources name two different valid tstates while that thread holds the GIL"},
    {C::ForeignTstate, "foreign-tstate", S::Error, F::ThreadState, N::Tstate, true, true, A::OnItsThread, false,
     "a TLS slot of thread A names a valid tstate that belongs to thread B"},
    {C::SharedTstate, "shared-tstate", S::Error, F::ThreadState, N::Tstate, true, true, A::OnItsThread, false,
     "two threads' TLS name the same tstate"},
    {C::InvalidGilHolder, "invalid-gil-holder", S::Error, F::ThreadState, N::Tstate, true, true, A::AnyThread, false,
     "the GIL is recorded as held by a tstate that is not valid or whose thread is gone"},
    {C::OrphanTstate, "orphan-tstate", S::Warning, F::ThreadState, N::Tstate, false, false, A::None, false,
     "a listed tstate whose thread no longer exists (a thread that ended without cleaning up)"},
    {C::GilstateOtherInterpreter, "gilstate-other-interpreter", S::Info, F::ThreadState, N::Thread, false, false, A::None, false,
     "a thread running Python runs a thread state of one interpreter while its PyGILState slot names its thread state of another"},
    {C::InternalsSplit, "internals-split", S::Warning, F::Pybind11, N::Records, false, false, A::None, false,
     "one interpreter holds more than one pybind11 internals record: its extension modules do not share pybind11 state "
     "(different compiler ABI, stdlib or internals version)"},
    {C::InternalsIstateMismatch, "internals-istate-mismatch", S::Error, F::Pybind11, N::Records, false, false, A::None, false,
     "a pybind11 internals record's istate is not the interpreter whose dict holds it"},
    {C::MultipleRuntimes, "multiple-runtimes", S::Info, F::Runtime, N::Runtimes, false, false, A::None, false,
     "more than one initialised copy of CPython is loaded in the process"},
    {C::GreenletBadFrame, "greenlet-bad-frame", S::Error, F::Greenlet, N::Greenlet, false, false, A::None, false,
     "a suspended greenlet's saved frame or frame object is not one (unreadable, likely freed, or another object)"},
    {C::GreenletFrameOnThread, "greenlet-frame-on-thread", S::Error, F::Greenlet, N::Greenlet, false, true, A::None, false,
     "a suspended greenlet's saved frame is also on a thread state's live frame stack"},
    {C::Deadlock, "deadlock", S::Error, F::Waits, N::Cycle, false, false, A::None, true,
     "the wait-for graph (a thread waiting for the GIL waits for its holder; for a mutex, rwlock or RLock, for its owner; in a "
     "join, for the joined thread; stopping the world, for an attached thread) has a cycle; also a cycle of asyncio tasks "
     "(a task awaits a task, or an asyncio lock held by a task, that awaits back)"},
    {C::GilHeldWhileBlocked, "gil-held-while-blocked", S::Warning, F::Waits, N::Waiters, false, false, A::None, true,
     "the GIL holder is blocked in something other than the GIL (a system call, a lock, a join) while other threads wait for "
     "the GIL, and no cycle explains it"},
    {C::StopTheWorldBlocked, "stop-the-world-blocked", S::Warning, F::Waits, N::Waiters, false, false, A::None, true,
     "a thread attached to Python is blocked in something else while other threads stop the world and wait for it to detach, "
     "and no cycle explains it"},
    {C::EventLoopBlocked, "event-loop-blocked", S::Warning, F::Asyncio, N::Task, false, false, A::None, true,
     "an event loop's thread, running one of its tasks or callbacks, is blocked in something other than the loop's selector "
     "(a system call, a lock, a sleep); what waits is said: ready callbacks, and timers due (live, on CLOCK_MONOTONIC) or "
     "scheduled (a core records no clock)"},
}};

constexpr bool inOrder() {
    for (size_t i = 0; i < kTable.size(); ++i)
        if (static_cast<size_t>(kTable[i].code) != i) return false;
    return true;
}
static_assert(inOrder(), "kTable holds one entry per FindingCode, in the enum's order");

}  // namespace

const std::array<FindingCodeInfo, kFindingCodeCount>& findingCodes() { return kTable; }

const FindingCodeInfo& findingInfo(FindingCode code) { return kTable[static_cast<size_t>(code)]; }

const char* findingName(FindingCode code) { return findingInfo(code).name; }

Severity findingSeverity(FindingCode code) { return findingInfo(code).severity; }

const char* severityName(Severity severity) {
    switch (severity) {
        case Severity::Error: return "error";
        case Severity::Warning: return "warning";
        case Severity::Info: return "info";
    }
    return "error";
}

}  // namespace pytstates
