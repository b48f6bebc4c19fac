// SPDX-License-Identifier: Apache-2.0
// Where a debugger can watch CPython's thread-state lifecycle: per CPython version, the functions
// that create, clear, delete, cache (PyThread_tss_set) and put to use a PyThreadState, the
// addresses to break at (a function's entry, or its return instructions for a value it returns,
// found by disassembling its bytes with capstone), and the register that holds the thread state
// there. What a build does not let us watch (a function inlined or without a symbol) is said.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

enum class LifecycleEvent { Created, Cleared, Deleted, Cached, Used };
const char* lifecycleEventName(LifecycleEvent event);  // "created", "cleared", ...

struct LifecycleProbe {
    uint64_t address = 0;       // where to break
    std::string function;       // "PyThreadState_New"
    std::string module;         // the CPython module it is in
    LifecycleEvent event = LifecycleEvent::Used;
    bool atReturn = false;      // a return instruction: the thread state is the return value
    std::string tstateRegister; // "rdi", "rsi", "rax" (x0, x1 on arm64)
    // Cached (PyThread_tss_set(Py_tss_t *key, void *value)): the register holding the key's
    // address; the pthread key number is the unsigned int at keyOffset from it.
    std::string keyRegister;
    uint64_t keyOffset = 0;
};

struct ProbePlan {
    std::vector<LifecycleProbe> probes;
    std::vector<std::string> modules;  // "libpython3.11.so.1.0 (CPython 3.11.2)": what is watched
    std::vector<std::string> cannot;   // one line per thing that cannot be recorded, and why
};

// Every CPython copy loaded in the target (a module defining _PyRuntime with a known version).
ProbePlan planLifecycleProbes(const Target& target);

// The functions that create a thread state, of every version: each CPython makes its first one
// through one of them, so a debugger that cannot see modules load waits at their entries (by
// name, pending until a module defines one) to plan there, before that first one is returned.
std::vector<std::string> lifecycleCreators();

// The exits of a function's code: its return instructions (x86_64: ret; aarch64: ret) and the
// targets of its direct jumps out of it (tail calls), as offsets from its start.
struct FunctionExits {
    std::vector<uint64_t> returns;
    std::vector<int64_t> tailCalls;
};
FunctionExits functionExits(const Arch& arch, const unsigned char* code, size_t size);
inline std::vector<uint64_t> returnInstructions(const Arch& arch, const unsigned char* code, size_t size) {
    return functionExits(arch, code, size).returns;
}

}  // namespace pytstates
