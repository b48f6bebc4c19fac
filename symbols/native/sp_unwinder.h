// SPDX-License-Identifier: Apache-2.0
// The innermost frames of a thread unwound by the rules libdwfl reads from the same CFI
// (.eh_frame), when every frame's rule is the common one on x86_64: the CFA is the stack pointer
// plus a constant, the return address is saved at the CFA plus a constant, the caller's stack
// pointer is the CFA; and the outermost frame, whose return address the CFI leaves undefined,
// where libdwfl ends the stack too. Each pc's rule is read once: a thousand threads parked in one wait cost a
// few memory reads each instead of libdwfl's unwind of each. A frame with any other rule (a frame
// pointer's CFA, a signal frame, no .eh_frame) leaves the whole thread to libdwfl.
#pragma once

#include <elfutils/libdwfl.h>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

class SpUnwinder {
public:
    SpUnwinder(Dwfl* dwfl, const Target& target) : dwfl_(dwfl), target_(target) {}

    struct Frame {
        uint64_t pc = 0;
        uint64_t sp = 0;
        bool activation = false;  // the innermost frame: pc is the instruction itself
    };
    // The first `count` physical frames, innermost first (fewer when the outermost frame comes
    // first); nullopt when a frame needs what these rules do not cover, or the stack ends
    // otherwise before `count` frames (libdwfl tells why then).
    std::optional<std::vector<Frame>> frames(const OsThread& thread, size_t count);

private:
    struct Rule {
        bool simple = false;
        bool outermost = false;  // the return address is undefined: the stack ends here
        int64_t cfaOffset = 0;  // CFA = sp + cfaOffset
        int64_t raOffset = 0;   // the return address is at CFA + raOffset
    };
    const Rule& ruleAt(uint64_t lookup);

    Dwfl* dwfl_;
    const Target& target_;
    std::unordered_map<uint64_t, Rule> rules_;  // by the pc looked up (pc - 1 for a return address)
};

}  // namespace pytstates
