// SPDX-License-Identifier: Apache-2.0
// Every CPython runtime in a target: each module defining _PyRuntime, its version and
// layout, and the interpreters and thread states reachable from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/frames.h"
#include "symbols/cpython/layout.h"
#include "symbols/elf/tls_access.h"
#include "symbols/target.h"

namespace pytstates {

struct ThreadState {
    uint64_t address = 0;
    uint64_t interp = 0;  // as the tstate records it
    std::optional<uint64_t> id;  // unknown when no source gives PyThreadState.id
    uint64_t threadId = 0;  // pthread_t
    std::optional<int64_t> nativeThreadId;
    std::optional<int> state;  // 3.13+: kDetached, kAttached, kSuspended (_Py_THREAD_*)
    static constexpr int kDetached = 0, kAttached = 1, kSuspended = 2;
    bool attached() const { return state == kAttached; }
    std::vector<PyFrame> frames;
    std::string note;
};

struct Interpreter {
    uint64_t address = 0;
    int64_t id = 0;
    bool main = false;
    bool gilKnown = false;
    // The thread state the GIL's holding thread runs now; 0: free (or unknown when !gilKnown).
    // take_gil writes last_holder. Up to 3.11 a holder that swaps in another state
    // (PyThreadState_Swap, a nested sub-interpreter call) keeps the GIL with last_holder left
    // behind: the holder is then gilstate.tstate_current. From 3.12 PyThreadState_Swap releases
    // the GIL and takes it again with the new state (_PyEval_ReleaseLock, _PyEval_AcquireLock;
    // 3.13+ detach and attach), so last_holder is the state the holder runs.
    uint64_t gilHolder = 0;
    uint64_t gilTakenBy = 0;  // last_holder, when it differs from gilHolder
    enum class GilSource { None, LastHolder, TstateCurrent };
    GilSource gilHolderSource = GilSource::None;
    bool gilDisabled = false;  // a free-threaded build running without the GIL: no holder at all
    uint64_t dict = 0, builtins = 0;
    std::vector<ThreadState> tstates;
    std::string note;
};

// Where a GIL holder was read: "last_holder", "gilstate.tstate_current".
inline const char* gilSourceName(Interpreter::GilSource s) {
    switch (s) {
        case Interpreter::GilSource::LastHolder: return "last_holder";
        case Interpreter::GilSource::TstateCurrent: return "gilstate.tstate_current";
        case Interpreter::GilSource::None: break;
    }
    return "";
}

struct Runtime {
    uint64_t address = 0;
    size_t moduleIndex = 0;  // into Target::modules()
    std::string modulePath;
    std::string version;     // "3.11.7"
    uint32_t versionHex = 0; // PY_VERSION_HEX as found
    CPythonLayout layout;
    bool initialised = false;
    uint64_t tstateCurrent = 0;  // <= 3.11: gilstate.tstate_current
    std::optional<uint32_t> autoTssKey;  // pthread key of PyGILState's autoTSSkey
    std::optional<TlsLocation> tssTstate;  // 3.12+: where _Py_tss_tstate lives
    std::string tssTstateNote;             // why it is unknown
    std::optional<TlsLocation> tssGilstate;  // 3.15+: where _Py_tss_gilstate (PyGILState's slot) lives
    std::vector<Interpreter> interpreters;
    std::vector<std::string> notes;
};

struct RuntimeSearch {
    std::vector<Runtime> runtimes;       // initialised and validated ones
    std::vector<std::string> rejected;   // candidates that did not validate, and why
};

// Every module defining _PyRuntime, with its version and layout: no walking, so it can run
// before a live target is stopped.
struct RuntimeCandidates {
    std::vector<Runtime> candidates;  // not walked yet
    std::vector<std::string> rejected;
};
// useDwarf=false ignores DWARF and separate debug files (as on a machine without debug packages).
RuntimeCandidates findRuntimeCandidates(const Target& target, bool useDwarf = true);
// Validates each candidate and walks its interpreters and thread states, each state's Python stack
// whole (up to kMaxPythonFrames).
RuntimeSearch walkRuntimes(const Target& target, const RuntimeCandidates& candidates);
RuntimeSearch findRuntimes(const Target& target);

// "3.11.7" from a PY_VERSION_HEX value (0x030b07f0); "3.12.0rc1" style for pre-releases.
std::string versionFromHex(uint32_t hex);

}  // namespace pytstates
