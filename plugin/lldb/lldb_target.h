// SPDX-License-Identifier: Apache-2.0
// What lldb knows of a process or core, as libpytstates.so.0 takes it (pytstates_target): memory
// through SBProcess::ReadMemory (a core's clean file pages through SBTarget::ReadMemory), threads
// and registers through SBThread, the auxiliary vector from /proc or the executable's ELF header.
// Shared by the report commands, py-tstates-record and the pyt commands' view.
#pragma once

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plugin/engine/pytstates.h"

namespace pytstates::lldbfront {

// A string libpytstates.so.0 malloc'ed, freed when it leaves scope.
struct Owned {
    char* text = nullptr;
    Owned() = default;
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;
    ~Owned() { pytstates_free(text); }
    std::string str() const { return text ? text : ""; }
};

std::optional<uint64_t> registerValue(lldb::SBFrame& frame, const char* name);

// What lldb knows of the process, as libpytstates.so.0 takes it (pytstates_target), and the
// storage its pointers point into. withThreads false: no thread is asked (inside a breakpoint
// callback).
struct LldbTarget {
    lldb::SBProcess process;
    lldb::SBTarget target;
    std::vector<std::vector<uint64_t>> registers;
    std::vector<pytstates_thread> threads;
    std::vector<uint64_t> auxv;
    std::string executable;
    std::vector<std::string> debugDirs;
    std::vector<const char*> debugDirPointers;
    pytstates_signal crash{};
    pytstates_target input{};

    // A core leaves clean file pages out, and lldb's core reader does not fill them in:
    // SBTarget::ReadMemory serves them from the module's file.
    static size_t read(void* context, uint64_t addr, void* buf, size_t len);

    LldbTarget(lldb::SBTarget t, lldb::SBProcess p, bool live, bool withThreads = true);
    LldbTarget(const LldbTarget&) = delete;
    LldbTarget& operator=(const LldbTarget&) = delete;
};

std::vector<const char*> pointersTo(const std::vector<std::string>& args);

}  // namespace pytstates::lldbfront
