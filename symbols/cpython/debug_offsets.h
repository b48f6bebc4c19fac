// SPDX-License-Identifier: Apache-2.0
// _Py_DebugOffsets (CPython 3.13+): the offsets CPython publishes at the start of _PyRuntime
// (cookie "xdebugpy") so that tools need no table per version. The struct itself grows between
// minors (3.14 and 3.15 inserted fields in the middle), so its shape is known per minor from
// CPython's headers; a newer minor is read with the newest shape known, validated, and said so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "symbols/cpython/layout.h"
#include "symbols/memory.h"

namespace pytstates {

// The newest minor whose _Py_DebugOffsets shape pytstates knows.
constexpr int kNewestDebugOffsetsMinor = 15;

struct DebugOffsetsHeader {
    uint64_t version = 0;       // PY_VERSION_HEX
    bool freeThreaded = false;
    int minor() const { return static_cast<int>((version >> 16) & 0xff); }
};

// The cookie, version and free-threaded flag; nullopt when there is no _Py_DebugOffsets.
std::optional<DebugOffsetsHeader> readDebugOffsetsHeader(const Memory& memory, uint64_t runtime);

struct DebugOffsetsUse {
    bool applied = false;
    std::string why;     // why not applied: no cookie, unreadable, an offset outside its struct, ...
    std::string notice;  // applied with a shape of another minor: which
};

// Validates the _Py_DebugOffsets at `runtime` and sets every field it covers (and those that
// follow from it: PyCapsule.pointer from sizeof(PyObject), ...) in *layout, source "debug_offsets".
DebugOffsetsUse applyDebugOffsets(const Memory& memory, uint64_t runtime, CPythonLayout* layout);

}  // namespace pytstates
