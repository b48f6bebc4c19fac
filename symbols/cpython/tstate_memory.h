// SPDX-License-Identifier: Apache-2.0
// What the memory at a thread-state pointer holds, read through the layout: a second look at a
// pointer that is in no interpreter's list (still a thread state? freed? reset? reused?), a
// thread deleting its own state, and the thread a state records as its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/runtimes.h"
#include "symbols/target.h"

namespace pytstates {

// What the memory at a pointer that is in no list shows now, from evidence only.
struct TstateMemory {
    enum class Kind {
        Unreadable,   // its memory is not readable in the target
        FreedTcache,  // its first 16 bytes read as a glibc tcache free-list entry
        FreedChunk,   // its malloc chunk is free (in a bin)
        Reset,        // interp, prev, next and thread_id are zero
        StillValid,   // it still reads as a thread state of `interp`, unlinked from the list
        Reused,       // it no longer reads as a thread state of any interpreter
    };
    Kind kind = Kind::Reused;
    uint64_t interp = 0;             // FreedTcache, StillValid: the listed interpreter its interp field names; 0: none
    std::optional<int> lwp;          // FreedTcache, StillValid: the thread its thread_id names
    uint64_t inside = 0;             // Reset: the interpreter whose own state holds it (its built-in initial
                                     // thread state, reset in place rather than freed); 0: none
    std::optional<std::string> type; // Reused: the Python object's type its memory now holds
};

// `runtime` indexes `runtimes` (the one whose pointer it is; the first when out of range).
TstateMemory lookAtTstateMemory(const Target& target, const std::vector<Runtime>& runtimes, size_t runtime, uint64_t tstate);

// The threads deleting their own thread state `tstate`, unlinked from `interp`'s list but not yet
// freed: its thread_id names the thread, its interp field `interp`, its neighbours are NULL or
// thread states of `interp`, and it is on no malloc free list.
std::vector<int> threadsDeletingTstate(const Target& target, const CPythonLayout& layout, uint64_t tstate, uint64_t interp);

// <= 3.11: CPython keeps one process-wide current thread state (gilstate.tstate_current).
bool hasProcessWideCurrent(const CPythonLayout& layout);

// Whether the thread state at `tstate` (listed or freed) records the thread whose struct pthread
// is `pthread` as its own (its thread_id).
bool tstateRecordsThread(const Memory& memory, const CPythonLayout& layout, uint64_t tstate, uint64_t pthread);

}  // namespace pytstates
