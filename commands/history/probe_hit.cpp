// SPDX-License-Identifier: Apache-2.0
#include "commands/history/probe_hit.h"

#include <cstring>

namespace pytstates {

std::optional<ProbeHit> readProbeHit(const LifecycleProbe& probe, size_t frames, const HitReaders& readers) {
    auto tstate = readers.readRegister(probe.tstateRegister);
    if (!tstate) return std::nullopt;
    ProbeHit hit;
    hit.tstate = *tstate;
    if (!probe.keyRegister.empty() && readers.readMemory) {
        if (auto where = readers.readRegister(probe.keyRegister)) {
            unsigned char bytes[4];
            // Py_tss_t's key is an unsigned int; both machines are little-endian.
            if (readers.readMemory(*where + probe.keyOffset, bytes, sizeof bytes))
                hit.key = uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
        }
    }
    // An inlined call shares its caller's pc: such frames are passed over, within a bound that
    // ends a debugger's walk round a corrupt stack.
    size_t asked = 0;
    while (readers.nextPc && hit.pcs.size() < frames && asked++ < 8 * frames + 8) {
        auto pc = readers.nextPc();
        if (!pc) break;
        if (hit.pcs.empty() || hit.pcs.back() != *pc) hit.pcs.push_back(*pc);
    }
    return hit;
}

}  // namespace pytstates
