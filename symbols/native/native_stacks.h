// SPDX-License-Identifier: Apache-2.0
// Native (C/C++) stacks of a target's threads, unwound by elfutils' libdwfl (CFI from .eh_frame and
// .debug_frame) over the Target's memory and registers, so cores, live processes and debugger
// targets unwind the same way. Frames are symbolized like a debugger's backtrace: inlined calls as
// frames of their own, function, module, source line. For the thread that crashed, each frame also
// says which values it holds: DWARF parameters (evaluated at the frame's pc, entry values through
// the caller's call sites), registers, and the words of its stack frame.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/frames.h"
#include "symbols/target.h"

namespace pytstates {

// A value a frame holds, for telling which frame was handed a pointer.
struct FrameValue {
    enum class Kind { Parameter, Register, StackWord };
    Kind kind = Kind::Register;
    std::string name;    // the parameter ("tstate", "this->tstate"), register ("rdi") or "[sp+0x18]"
    uint64_t value = 0;
};

struct NativeFrame {
    uint64_t pc = 0;           // the frame's pc: a return address for callers (activation false)
    bool activation = true;    // pc is the instruction itself (the innermost frame, a signal frame)
    bool inlined = false;      // an inlined call; the frame below it (outer) has the same pc
    bool tailCall = false;     // rebuilt from DWARF call sites: a function that jumped (tail call) to the one above
    std::string function;      // empty when unknown
    std::string module;        // the module's path as the target names it; empty: in no known module
    uint64_t offset = 0;       // pc - the module's load bias: the address in the module's file
    std::string file;          // source file (DWARF); empty when unknown
    int line = 0;
    std::vector<FrameValue> values;  // only for the frames asked for (NativeStacks::unwind)
    std::vector<PyFrame> python;     // the Python frames this frame runs (commands/, --native)
};

struct NativeStack {
    int lwp = 0;
    std::vector<NativeFrame> frames;  // innermost first
    std::string end;                  // why the unwind stopped early; empty when it reached the end
};

// One physical frame as the unwinder left it: where its stack frame starts, for telling which
// thread's live stack an address lies on.
struct StackSpan {
    uint64_t pc = 0;
    uint64_t sp = 0;         // 0 when unknown
    std::string function;    // from the symbol tables (the outermost function at pc); empty when unknown
    std::string module;      // the module's path as the target names it; empty: in no known module
    bool activation = false; // pc is the instruction itself (the innermost frame, a signal frame)
};

// What one eval-loop frame (_PyEval_EvalFrameDefault) was handed, from its DWARF parameters at the
// frame's pc: its `tstate` and its frame (`frame` 3.11+, `f` <= 3.10). Absent when optimized out there.
struct EvalArguments {
    uint64_t sp = 0;  // the frame's stack pointer: its depth on the thread's stack
    std::optional<uint64_t> tstate, frame;
};

class NativeStacks {
public:
    // Reports the target's modules (those with a matching file) to libdwfl. useDwarf=false:
    // function names from symbol tables only, no source lines, no parameters.
    NativeStacks(const Target& target, bool useDwarf);
    ~NativeStacks();
    NativeStacks(const NativeStacks&) = delete;
    NativeStacks& operator=(const NativeStacks&) = delete;

    // Empty when stacks can be unwound; else why not (one line).
    const std::string& unavailable() const { return unavailable_; }

    // The thread's stack, at most maxFrames frames. For the first valuesDepth physical frames,
    // the values each holds (FrameValue).
    // dwarf=false: functions named from the symbol tables only (no inlined calls, lines or tail
    // calls): the cheap look at many threads.
    NativeStack unwind(const OsThread& thread, size_t maxFrames, size_t valuesDepth = 0, bool dwarf = true);
    // The same as unwind(thread, maxFrames, 0, false) without its `end`: the first frames named
    // from the symbol tables, unwound by the rules each pc's CFI gives once (sp_unwinder.h) where
    // they are the common ones, by libdwfl where not. Kept once per sequence of pcs (threads
    // parked in one wait share it) for this object's lifetime.
    const std::vector<NativeFrame>& firstFrames(const OsThread& thread, size_t maxFrames);
    // Every physical frame, innermost first, named from the symbol tables alone (no DWARF read).
    // Kept per thread once unwound: the target does not change under one report.
    const std::vector<StackSpan>& spans(const OsThread& thread);
    // The same, only when that thread was unwound already; else null (nothing is unwound).
    const std::vector<StackSpan>* unwoundSpans(const OsThread& thread) const;
    // Whether those spans stop short of the stack's end (no frame, or an end in memory of no known
    // module or of a module whose file is missing): frames may be unseen.
    bool spansCutShort(const OsThread& thread);
    // Every eval-loop frame of the thread, innermost first, with the arguments DWARF locates; empty
    // without DWARF (useDwarf false) or when none is found. Unwinds the thread once more, keeping
    // each frame's registers.
    std::vector<EvalArguments> evalArguments(const OsThread& thread);
    // The innermost frame only, named from the symbol tables (no memory is read, no DWARF loaded).
    std::vector<NativeFrame> top(const OsThread& thread);
    // The frames at one address, named with DWARF when there is some (inlined calls first):
    // activation false for a return address (looked up one byte before it, in the call).
    std::vector<NativeFrame> at(uint64_t pc, bool activation);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
    std::string unavailable_;
};

}  // namespace pytstates
