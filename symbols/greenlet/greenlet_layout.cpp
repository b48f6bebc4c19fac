// SPDX-License-Identifier: Apache-2.0
#include "symbols/greenlet/greenlet_layout.h"

#include "symbols/elf/dwarf_types.h"

namespace pytstates {

std::optional<GreenletLayout> greenletLayoutFromDwarf(DwarfTypes& dwarf) {
    GreenletLayout l;
    l.source = "dwarf";
    auto get = [&](const char* type, const char* member, int64_t* out) {
        auto offset = dwarf.memberOffset(type, member);
        if (offset) *out = *offset;
        return offset.has_value();
    };
    if (!get("_greenlet", "pimpl", &l.pimpl) || !get("greenlet::Greenlet", "stack_state._stack_start", &l.stackStart) ||
        !get("greenlet::Greenlet", "stack_state.stack_stop", &l.stackStop) || !get("greenlet::UserGreenlet", "_main_greenlet", &l.userMainGreenlet) ||
        !get("greenlet::UserGreenlet", "_parent", &l.userParent) || !get("greenlet::MainGreenlet", "_thread_state", &l.mainThreadState) ||
        !get("greenlet::ThreadState", "main_greenlet", &l.threadStateMain) || !get("greenlet::ThreadState", "current_greenlet", &l.threadStateCurrent))
        return std::nullopt;
    // 3.x keeps _self in the base class; 2.x in each subclass, at the same offset in both.
    if (!get("greenlet::Greenlet", "_self", &l.selfPointer) && !get("greenlet::UserGreenlet", "_self", &l.selfPointer)) return std::nullopt;
    get("greenlet::Greenlet", "python_state._top_frame", &l.topFrame);
    get("greenlet::Greenlet", "python_state.current_frame", &l.currentFrame);  // 3.11+
    if (l.topFrame < 0 && l.currentFrame < 0) return std::nullopt;
    return l;
}

namespace {

struct TableRow {
    const char* version;
    int minor;
    int64_t selfPointer, stackStart, stackStop, topFrame, currentFrame, userMainGreenlet, userParent, mainThreadState;
};

// Measured with each release's DWARF (greenlet.cpp built with -g against that CPython's headers;
// Debian 12's 2.0.2 for 3.11, Debian 13's 3.1.0 for 3.13, unstable's 3.3.2 for 3.12 to 3.15).
// 3.1.0 still keeps _self in each subclass (at the same offset), like 2.x.
const TableRow kTable[] = {
    {"2.0.2", 11, 160, 48, 56, 96, 128, 168, 184, 168},
    {"3.1.0", 13, 152, 48, 56, 96, 120, 160, 176, 160},
    {"3.3.2", 12, 8, 56, 64, 104, 136, 168, 184, 176},
    {"3.3.2", 13, 8, 56, 64, 104, 128, 160, 176, 168},
    {"3.3.2", 14, 8, 56, 64, 104, 144, 176, 192, 184},
    {"3.3.2", 15, 8, 56, 64, 104, 144, 176, 192, 184},
};

}  // namespace

std::optional<GreenletLayout> greenletLayoutTable(const std::string& greenletVersion, int pythonMinor) {
    for (const auto& row : kTable) {
        if (greenletVersion != row.version || pythonMinor != row.minor) continue;
        GreenletLayout l;
        l.source = "table";
        l.selfPointer = row.selfPointer;
        l.stackStart = row.stackStart;
        l.stackStop = row.stackStop;
        l.topFrame = row.topFrame;
        l.currentFrame = row.currentFrame;
        l.userMainGreenlet = row.userMainGreenlet;
        l.userParent = row.userParent;
        l.mainThreadState = row.mainThreadState;
        return l;
    }
    return std::nullopt;
}

std::string greenletTablesCovered() { return "2.0.2 on CPython 3.11, 3.1.0 on 3.13, 3.3.2 on 3.12 to 3.15"; }

}  // namespace pytstates
