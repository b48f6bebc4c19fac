// SPDX-License-Identifier: Apache-2.0
// Every greenlet of a CPython runtime (seed 004): found on the collector's lists by type (greenlet's
// own and its subclasses, such as gevent's Greenlet), tied to its OS thread through the thread's
// greenlet::ThreadState (a C++ thread_local of the _greenlet module) and its main greenlet, with
// the Python frames a suspended one saved when it switched out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/runtimes.h"
#include "symbols/cpython/suspended_stack.h"
#include "symbols/glibc/pthread_keys.h"
#include "symbols/greenlet/greenlet_layout.h"
#include "symbols/target.h"

namespace pytstates {

// A greenlet as a suspended stack: lwp is its OS thread (0 when unknown: dead, or its thread has
// ended); state running|suspended|dead|unstarted (docs/report.schema.json); frames, for a suspended one, those
// it saved when it switched out; waitsOn stays empty (memory shows no wait).
struct GreenletInfo : SuspendedStack {
    std::string typeName;     // "greenlet.greenlet", or the subclass's
    bool main = false;        // its thread's main greenlet
    uint64_t parent = 0;      // 0 for a main greenlet (and a user one whose parent is gone)
    // What a suspended greenlet saved of its thread state, and what memory shows of it.
    uint64_t savedFrame = 0;        // the frame it will resume (3.11+: an interpreter frame)
    uint64_t savedFrameObject = 0;  // its PyFrameObject (python_state._top_frame)
    uint64_t savedFrameOnTstate = 0;  // a thread state whose live frame stack holds savedFrame
    std::string savedFrameProblem;        // what the saved frame holds instead, when it is not a frame
    std::string savedFrameObjectProblem;  // the same for the frame object (<= 3.10 they are one)
};

struct GreenletThread {
    int lwp = 0;
    uint64_t threadState = 0;     // greenlet::ThreadState of this OS thread
    uint64_t mainGreenlet = 0;
    uint64_t currentGreenlet = 0;
};

struct GreenletScan {
    size_t runtimeIndex = 0;
    std::string module;        // the _greenlet extension's path
    std::string version;       // greenlet.__version__ as the process holds it; empty if unread
    std::string layoutSource;  // "dwarf", "table"; empty when no layout fits
    std::string problem;       // why greenlets are not (all) listed; empty when none
    std::vector<GreenletThread> threads;
    std::vector<GreenletInfo> greenlets;
    size_t gcObjects = 0;      // objects walked on the collector's lists
    size_t rejected = 0;       // objects of greenlet's type whose implementation did not point back
};

// The _greenlet modules of a target and their DWARF layouts: files only, before a live target stops.
struct GreenletModule {
    size_t moduleIndex = 0;
    std::optional<GreenletLayout> dwarf;
};
std::vector<GreenletModule> findGreenletModules(const Target& target, bool useDwarf);

// nullopt when the runtime has no _greenlet module loaded.
std::optional<GreenletScan> scanGreenlets(const Target& target, const GlibcKeys* glibc, const Runtime& runtime,
                                          size_t runtimeIndex, const std::vector<GreenletModule>& modules);

}  // namespace pytstates
