// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/frame_locals.h"

#include "symbols/cpython/frames.h"
#include "symbols/cpython/object_reader.h"
#include "symbols/cpython/object_repr.h"

namespace pytstates {

namespace {
ReprLimits localLimits() {
    ReprLimits limits;
    limits.maxBytes = kMaxLocalText;
    return limits;
}
void fill(FrameReader& frames, const ObjectReader& objects, const ReprReader& reprs, PyFrame& frame) {
    frame.localsRead = true;
    for (const auto& l : frames.locals(frame.address, kMaxLocalsPerFrame)) {
        if (!l.value) continue;  // unset: locals() leaves it out too
        PyFrame::Local out;
        out.name = l.name;
        out.kind = l.kind;
        out.address = l.value;
        out.type = objects.typeName(l.value).value_or("");
        ObjectRepr repr = reprs.repr(l.value);
        // JSON's value: what CPython's own repr prints from memory (containers included);
        // an object whose repr only its own code could print has none.
        if (repr.readable && repr.builtin) out.value = repr.text;
        out.shown = repr.text;
        frame.locals.push_back(std::move(out));
    }
}
// The first maxFrames frames of a stack: a thread state's, or a suspended one's.
void fillStack(FrameReader& frames, const ObjectReader& objects, const ReprReader& reprs, std::vector<PyFrame>& stack,
               size_t maxFrames) {
    for (size_t i = 0; i < stack.size() && i < maxFrames; ++i) fill(frames, objects, reprs, stack[i]);
}
}  // namespace

void readFrameLocals(const Target& target, Report& report, FrameLocalsOf which, size_t maxFrames) {
    for (auto& runtime : report.runtimes) {
        if (which != FrameLocalsOf::ThreadStates) break;
        FrameReader frames(target, runtime.layout);
        ObjectReader objects(target, runtime.layout);
        ReprReader reprs(objects, localLimits());
        for (auto& interp : runtime.interpreters)
            for (auto& ts : interp.tstates) fillStack(frames, objects, reprs, ts.frames, maxFrames);
    }
    for (auto& scan : report.greenlets) {
        if (which != FrameLocalsOf::Greenlets) break;
        if (scan.runtimeIndex >= report.runtimes.size()) continue;
        const CPythonLayout& layout = report.runtimes[scan.runtimeIndex].layout;
        FrameReader frames(target, layout);
        ObjectReader objects(target, layout);
        ReprReader reprs(objects, localLimits());
        for (SuspendedStack& g : scan.greenlets) fillStack(frames, objects, reprs, g.frames, maxFrames);
    }
    for (auto& scan : report.asyncio) {
        if (which != FrameLocalsOf::Tasks) break;
        if (scan.runtimeIndex >= report.runtimes.size()) continue;
        const CPythonLayout& layout = report.runtimes[scan.runtimeIndex].layout;
        FrameReader frames(target, layout);
        ObjectReader objects(target, layout);
        ReprReader reprs(objects, localLimits());
        for (auto& t : scan.tasks)
            for (auto& f : t.frames) fill(frames, objects, reprs, f);
    }
}

}  // namespace pytstates
