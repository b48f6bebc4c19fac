// SPDX-License-Identifier: Apache-2.0
// Every object CPython's cyclic garbage collector tracks: the doubly linked PyGC_Head lists of its
// three generations and the permanent one (GIL builds, 3.8+). There is no other registry of, say,
// every greenlet: walking these lists is how they are found.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "symbols/cpython/layout.h"
#include "symbols/memory.h"

namespace pytstates {

struct GcWalk {
    size_t objects = 0;   // objects visited
    std::string problem;  // why a list was left early (broken link, unreadable, too long); empty if none
};

// gcState: the address of the struct holding the lists (the interpreter, or _PyRuntime when
// layout.gcInRuntime). visit(object, type) gets each object and its ob_type. Each list is walked
// at most maxObjects nodes and checked link by link (a node's prev must name the node before it),
// so a damaged or cyclic list ends the walk of that list with a problem, never a loop.
GcWalk walkGcObjects(const Memory& memory, const CPythonLayout& layout, uint64_t gcState,
                     const std::function<void(uint64_t object, uint64_t type)>& visit, size_t maxObjects = 100000000);

}  // namespace pytstates
