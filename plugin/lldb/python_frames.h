// SPDX-License-Identifier: Apache-2.0
// lldb's C frames and the view's Python frames: which lldb frame is the g-th real (not inlined)
// _PyEval_EvalFrameDefault of a thread (the view's eval_group), and the Python frame a thread
// has selected (pyt up/down/frame), kept per stop and re-derived when the user moved with lldb's
// own `frame select`/`up`/`down`.
#pragma once

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace pytstates::lldbfront {

// The lldb frame index of each real eval-loop frame of thread, innermost first.
std::vector<uint32_t> evalFrameIndexes(lldb::SBThread thread);

// The Python frame (index into frames, the view's "frames" of the thread's stack) that the
// thread's selection means: the one pyt last selected while lldb's selected frame is still its
// eval frame; else the innermost Python frame run by the nearest eval frame at or above lldb's
// selected frame (libpython's rule); else the innermost. nullopt: no Python frame.
std::optional<size_t> selectedPythonFrame(lldb::SBThread thread, const nlohmann::json& frames, const std::vector<uint32_t>& evals);

// libpython.py's rule for py-up: lldb's selected frame is below the eval frame evalFrame, and it
// or a frame between is one libpython.py counts as a Python frame of its own (is_other_python_frame:
// take_gil, the collector, cfunction_call and cfunction_vectorcall_*, wrapper_call; the list
// plugin/python/pytstates/libpython_frames.py keeps too): the thread is in a call that eval frame
// made, and the first pyt up selects the eval frame's own Python frame.
bool inCallFromPython(lldb::SBThread thread, uint32_t evalFrame);

// Selects Python frame k: remembers it, and selects the C frame that evaluates it. Returns the
// lldb frame index selected, or nullopt when lldb shows no eval frame for it (k is remembered,
// lldb's selection unchanged).
std::optional<uint32_t> selectPythonFrame(lldb::SBThread thread, const nlohmann::json& frames, size_t k,
                                          const std::vector<uint32_t>& evals);

}  // namespace pytstates::lldbfront
