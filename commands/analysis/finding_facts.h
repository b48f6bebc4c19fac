// SPDX-License-Identifier: Apache-2.0
// The typed facts a finding carries: every per-thread pointer, record or piece of evidence that
// names what it is about (its sources), and what each code's words need. The analyses fill them;
// commands/render/finding_words turns them into the message and the sources' lines.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "symbols/cpython/runtimes.h"
#include "symbols/native/wait_functions.h"
#include "symbols/pybind11/internals_id.h"

namespace pytstates {

namespace source {

// Per-thread pointers: thread `lwp`'s pointer names `tstate`.
struct Current {  // CPython's current thread state
    int lwp = 0;
    uint64_t tstate = 0;
    std::string variable;  // "gilstate.tstate_current" (<= 3.11), "_Py_tss_tstate"
};
struct AutoTss {  // PyGILState's slot
    int lwp = 0;
    uint64_t tstate = 0;
    uint32_t key = 0;          // its pthread key (<= 3.14)
    bool threadLocal = false;  // 3.15+: the C thread-local _Py_tss_gilstate, no key
};
struct Pybind11Key {  // a pybind11 internals record's thread-state cache
    int lwp = 0;
    uint64_t tstate = 0;
    uint32_t key = 0;
    std::string record;         // the record's ID
    bool recordShared = false;  // another record lives in the same interpreter
};

// Process-wide and per-object places.
struct RuntimeCurrent {  // <= 3.11: a runtime's gilstate.tstate_current, claimed by no thread
    std::string version;
};
struct Gil {  // an interpreter's GIL
    int64_t interp = 0;
};
struct ThreadList {  // an interpreter's list of thread states
    int64_t interp = 0;
};
struct RunnerStack {  // the stack of the thread that runs a thread state, and the evidence found there
    int lwp = 0;
    std::string evidence;  // TstatePlace::evidence
};
struct GreenletState {  // a greenlet's saved Python state
    uint64_t greenlet = 0;
};
struct FrameStack {  // a thread state's current frame stack
    uint64_t tstate = 0;
};
struct InternalsRecord {  // a pybind11 internals record
    std::string id;
    uint64_t address = 0;  // told when non-zero
};
struct RuntimeCopy {  // one copy of CPython
    uint64_t address = 0;  // its _PyRuntime
    std::string module;
};

// The evidence of a wait.
struct NativeStack {  // a thread's native stack, with the frame that says its wait
    int lwp = 0;
    std::optional<size_t> frame;
    std::string function;
    bool frameAlways = false;  // a waiter of the GIL: the frame told even when unknown (#0)
};
struct GilHolder {  // where a GIL's holder was read, and the thread that runs it
    int lwp = 0;
    int64_t interp = 0;
    uint64_t tstate = 0;
    uint64_t takenBy = 0;  // last_holder, when it differs
    Interpreter::GilSource source = Interpreter::GilSource::None;
    std::string layout;    // the runtime's layout source: "dwarf", "debug_offsets", "table"
};
struct LockOwner {  // a lock's owner field: a mutex's __owner, an rwlock's __cur_writer, an RLock's rlock_owner
    WaitKind kind = WaitKind::Mutex;
    uint64_t object = 0;
    std::string layout;  // BlockedOn::layoutSource
    bool late = false;   // read from the running process after the stop ended
};
struct JoinedThread {  // the joined thread's struct pthread
    uint64_t object = 0;
    int lwp = 0;
    bool late = false;
};
struct WithBlock {  // a frame of `lwp` that executes the body of `with <object>:`, by its code's exception table or block stack
    int lwp = 0;
    uint64_t object = 0;
    uint64_t frame = 0;
    std::string function, file;
    int line = -1;       // where the frame is now
    int withLine = -1;   // the `with` statement's line (its cleanup's); -1 unknown
    std::string layout;  // where the frame's fields were read from
};
struct AttachedState {  // an attached thread state's state field, which a stop of the world waits on
    uint64_t object = 0;
    int lwp = 0;
    std::string layout;
};

}  // namespace source

using FindingSource =
    std::variant<source::Current, source::AutoTss, source::Pybind11Key, source::RuntimeCurrent, source::Gil, source::ThreadList,
                 source::RunnerStack, source::GreenletState, source::FrameStack, source::InternalsRecord, source::RuntimeCopy,
                 source::NativeStack, source::GilHolder, source::LockOwner, source::JoinedThread, source::AttachedState,
                 source::WithBlock>;

// The thread a pointer source belongs to; none for the others.
std::optional<int> sourceLwp(const FindingSource& s);

// How a thread runs Python now.
enum class RunsPython { No, HoldsGil, Attached /* free-threaded, no GIL */ };

// A suspended greenlet a finding is about.
struct GreenletFacts {
    uint64_t address = 0;
    bool main = false;
    uint64_t savedFrame = 0;
    std::optional<std::string> function;  // the saved frame's function, when its frames were read
    std::string problem;        // greenlet-bad-frame: what is wrong with it (symbols/greenlet's words)
    bool frameObject = false;   // greenlet-bad-frame: the problem is its frame object's, not its frame's
};

// A pybind11 internals record a finding is about.
struct RecordFacts {
    InternalsId id;
    uint64_t address = 0;
    std::string dictName;
    uint64_t interpreter = 0;
    uint64_t istate = 0;
    std::optional<uint32_t> key;
    std::vector<std::string> modules;
};

// A copy of CPython a finding is about.
struct RuntimeFacts {
    std::string module;
    std::string version;
    uint64_t address = 0;
    std::optional<uint32_t> autoTssKey;
};

}  // namespace pytstates
