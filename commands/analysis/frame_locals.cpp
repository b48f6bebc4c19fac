// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/frame_locals.h"

#include "symbols/cpython/frames.h"
#include "symbols/cpython/object_reader.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {
void fill(FrameReader& frames, const ObjectReader& objects, PyFrame& frame) {
    frame.localsRead = true;
    for (const auto& l : frames.locals(frame.address, kMaxLocalsPerFrame)) {
        if (!l.value) continue;  // unset: locals() leaves it out too
        PyFrame::Local out;
        out.name = l.name;
        out.kind = l.kind;
        out.address = l.value;
        out.type = objects.typeName(l.value).value_or("");
        out.value = objects.scalarRepr(l.value, kMaxLocalText);
        out.shown = out.value ? *out.value
                              : "<" + (out.type.empty() ? std::string("unreadable object") : out.type) + " at " + hexAddress(l.value) + ">";
        frame.locals.push_back(std::move(out));
    }
}
// Every frame of a stack (a thread state's, a suspended one's): what is shown of it is the renderer's.
void fillStack(FrameReader& frames, const ObjectReader& objects, std::vector<PyFrame>& stack) {
    for (auto& f : stack) fill(frames, objects, f);
}
}  // namespace

void readFrameLocals(const Target& target, Report& report, FrameLocalsOf which) {
    for (auto& runtime : report.runtimes) {
        if (which != FrameLocalsOf::ThreadStates) break;
        FrameReader frames(target, runtime.layout);
        ObjectReader objects(target, runtime.layout);
        for (auto& interp : runtime.interpreters)
            for (auto& ts : interp.tstates) fillStack(frames, objects, ts.frames);
    }
    for (auto& scan : report.greenlets) {
        if (which != FrameLocalsOf::Greenlets) break;
        if (scan.runtimeIndex >= report.runtimes.size()) continue;
        const CPythonLayout& layout = report.runtimes[scan.runtimeIndex].layout;
        FrameReader frames(target, layout);
        ObjectReader objects(target, layout);
        for (SuspendedStack& g : scan.greenlets) fillStack(frames, objects, g.frames);
    }
    for (auto& scan : report.asyncio) {
        if (which != FrameLocalsOf::Tasks) break;
        if (scan.runtimeIndex >= report.runtimes.size()) continue;
        const CPythonLayout& layout = report.runtimes[scan.runtimeIndex].layout;
        FrameReader frames(target, layout);
        ObjectReader objects(target, layout);
        for (auto& t : scan.tasks) fillStack(frames, objects, t.frames);
    }
}

}  // namespace pytstates
