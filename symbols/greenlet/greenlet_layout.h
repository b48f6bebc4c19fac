// SPDX-License-Identifier: Apache-2.0
// Where greenlet's C++ objects keep what pytstates reads: PyGreenlet -> its implementation
// (greenlet::Greenlet, UserGreenlet or MainGreenlet) -> saved stack and Python state, and the
// per-thread greenlet::ThreadState. From the _greenlet module's DWARF, else a table measured per
// greenlet release and CPython minor on x86_64 (the Python state's fields follow CPython's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pytstates {

class DwarfTypes;

struct GreenletLayout {
    std::string source;           // "dwarf" or "table"
    int64_t pimpl = 32;           // PyGreenlet.pimpl
    int64_t selfPointer = -1;     // Greenlet::_self (3.x) or UserGreenlet/MainGreenlet::_self (2.x)
    int64_t stackStart = -1;      // Greenlet::stack_state._stack_start: set while suspended
    int64_t stackStop = -1;       // stack_state.stack_stop: set once started; (char*)-1 for a main greenlet
    int64_t topFrame = -1;        // python_state._top_frame: the saved PyFrameObject (<= 3.10 walked)
    int64_t currentFrame = -1;    // python_state.current_frame: the saved _PyInterpreterFrame (3.11+)
    int64_t userMainGreenlet = -1;  // UserGreenlet::_main_greenlet: its thread's main greenlet
    int64_t userParent = -1;        // UserGreenlet::_parent
    int64_t mainThreadState = -1;   // MainGreenlet::_thread_state: greenlet::ThreadState*, null once the thread ended
    int64_t threadStateMain = 0;    // greenlet::ThreadState.main_greenlet
    int64_t threadStateCurrent = 8; // greenlet::ThreadState.current_greenlet
};

// nullopt when the DWARF does not describe greenlet's classes.
std::optional<GreenletLayout> greenletLayoutFromDwarf(DwarfTypes& dwarf);
// nullopt for a release or CPython minor never measured: an unknown layout is not guessed.
std::optional<GreenletLayout> greenletLayoutTable(const std::string& greenletVersion, int pythonMinor);
// "2.0.2 on 3.11, 3.3.2 on 3.12-3.15": what the tables cover, for messages.
std::string greenletTablesCovered();

}  // namespace pytstates
