// _Py_DebugOffsets (CPython 3.13+): the offsets CPython publishes at the start of _PyRuntime
// (cookie "xdebugpy"), validated and copied into a CPythonLayout. 3.14 inserted fields in the
// middle of the struct, so the layout of the struct itself is chosen by minor version.
#pragma once

#include <cstdint>
#include <string>

#include "symbols/cpython/layout.h"
#include "symbols/memory.h"

namespace pytstates {

// False (and *why) when the bytes at `runtime` are not a valid _Py_DebugOffsets of 3.13 or 3.14.
bool applyDebugOffsets(const Memory& memory, uint64_t runtime, CPythonLayout* layout, std::string* why);

}  // namespace pytstates
