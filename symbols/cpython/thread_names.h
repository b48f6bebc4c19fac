// SPDX-License-Identifier: Apache-2.0
// Python's names of its threads: threading's registry (`_active`, ident -> Thread, and `_limbo`,
// Thread -> Thread for threads started but not yet registered) gives each threading.Thread's
// `_name` by the OS thread it runs on (its ident: pthread_self(), and `_native_id` 3.8+).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "symbols/cpython/runtimes.h"
#include "symbols/target.h"

namespace pytstates {

struct PythonThreadNames {
    std::map<uint64_t, std::string> byIdent;  // pthread_t -> Thread.name
    // Thread._native_id (the LWP) -> Thread.name and its ident (0: none). The native id is the
    // weaker key: 3.13+'s _MainThread takes its ident from the runtime's main thread but its
    // native id from the thread that imported threading, which in an embedding program can be
    // another one.
    struct ByNativeId {
        std::string name;
        uint64_t ident = 0;
    };
    std::map<int64_t, ByNativeId> byNativeId;
    // threading._main_thread's ident and native id (0: none read): the Thread threading made for
    // the thread it was first imported on, named "MainThread" whichever thread that was.
    uint64_t mainIdent = 0;
    int64_t mainNativeId = 0;
    std::string note;  // why nothing was read (no threading module, an unreadable registry)
};

// The names of one interpreter's threading.Threads; at most maxThreads of them.
PythonThreadNames readPythonThreadNames(const Target& target, const Runtime& runtime, const Interpreter& interp,
                                        size_t maxThreads = 4096);

// A Python int that fits in 64 bits (a thread's ident, its native id); nullopt when it does not
// read as one.
std::optional<int64_t> readSmallPyLong(const Memory& memory, const CPythonLayout& layout, uint64_t object);

}  // namespace pytstates
