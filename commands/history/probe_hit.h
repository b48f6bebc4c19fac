// SPDX-License-Identifier: Apache-2.0
// What one py-tstates-record breakpoint hit keeps, decided once for every debugger: the thread
// state in the probe's register, for a cached event the pthread key (the unsigned int at the key
// register plus the probe's offset), and the pc and return addresses of the top frames, an
// inlined call's repeated pc once. The debugger (gdb's Python, the lldb plugin) only reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/lifecycle_probes.h"

namespace pytstates {

struct HitReaders {
    // A register of the stopped thread's innermost frame, by its name (Arch's); nullopt: unreadable.
    std::function<std::optional<uint64_t>(const std::string& name)> readRegister;
    // len bytes at address into buffer; false unless all of them were read.
    std::function<bool(uint64_t address, void* buffer, size_t length)> readMemory;
    // The pc of the next frame, the innermost first; nullopt when there is no further frame.
    std::function<std::optional<uint64_t>()> nextPc;
};

struct ProbeHit {
    uint64_t tstate = 0;
    std::optional<uint32_t> key;  // cached events: the pthread key; nullopt when it could not be read
    std::vector<uint64_t> pcs;    // at most `frames`, innermost first, no pc twice in a row
};

// nullopt when the thread state's register cannot be read: such a hit is not recorded.
std::optional<ProbeHit> readProbeHit(const LifecycleProbe& probe, size_t frames, const HitReaders& readers);

}  // namespace pytstates
