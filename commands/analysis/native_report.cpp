// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/native_report.h"

#include <map>
#include <set>

#include "symbols/cpython/frames.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

constexpr size_t kMaxNativeFrames = 256;
constexpr size_t kCrashValueFrames = 10;  // physical frames of the crashing thread whose values are read
constexpr size_t kExplainFrames = 12;     // frames looked at for a finding's pointer
constexpr size_t kMaxMessage = 512;

// The Python stack that runs on a thread: the frames of every thread state it runs, innermost
// state first (a state swapped in inside another's call runs in the inner eval-loop frames).
std::vector<PyFrame> pythonStackOf(const std::map<uint64_t, const std::vector<PyFrame>*>& framesOf,
                                   const std::vector<uint64_t>& runs) {
    std::vector<PyFrame> out;
    for (uint64_t ts : runs) {
        auto it = framesOf.find(ts);
        if (it != framesOf.end()) out.insert(out.end(), it->second->begin(), it->second->end());
    }
    return out;
}

}  // namespace

// Gives each eval-loop frame the Python frames it runs: from the innermost Python frame outwards,
// up to and including the next entry frame. Returns how many Python frames found no eval frame.
size_t mergePython(std::vector<NativeFrame>& frames, const std::vector<PyFrame>& py) {
    size_t next = 0;
    for (auto& f : frames) {
        if (f.inlined || !isEvalLoopFunction(f.function)) continue;
        while (next < py.size()) {
            f.python.push_back(py[next]);
            if (py[next++].entry) break;
        }
    }
    return py.size() - next;
}

void readNativeStacks(const Target& target, NativeStacks& stacks, const ReportOptions& options,
                      const std::vector<Runtime>& python, Report& report) {
    report.nativeStacks = options.native;
    auto crash = target.crashSignal();
    // Built once for all threads: a thousand threads made these lookups quadratic.
    std::map<int, const OsThread*> threadOf;  // the last one of an LWP, as before
    for (const auto& t : target.threads()) threadOf[t.lwp] = &t;
    std::map<uint64_t, const std::vector<PyFrame>*> framesOf;
    std::map<int, std::vector<uint64_t>> runsOn;
    // The crashed thread's Python frames go under its eval-loop frames with or without --native:
    // the CRASH stack says which Python function each one runs.
    if (options.native || crash) {
        for (const auto& rt : python)
            for (const auto& interp : rt.interpreters)
                for (const auto& ts : interp.tstates) framesOf[ts.address] = &ts.frames;
        runsOn = report.tstatesByLwp();
    }
    static const std::vector<uint64_t> kNoRuns;
    for (auto& row : report.threads) {
        auto found = threadOf.find(row.lwp);
        if (found == threadOf.end()) continue;
        const OsThread* thread = found->second;
        bool crashed = crash && crash->lwp == row.lwp;
        if (!options.native && !crashed) {
            row.nativeFrames = stacks.top(*thread);
            continue;
        }
        NativeStack stack = stacks.unwind(*thread, kMaxNativeFrames, crashed ? kCrashValueFrames : 0);
        if (options.native || crashed)
            if (auto py = pythonStackOf(framesOf, runsOn.count(row.lwp) ? runsOn.at(row.lwp) : kNoRuns); !py.empty())
                // (without --native the crash's stack is cut to its innermost frame below: what is left over is not told)
                if (size_t left = mergePython(stack.frames, py); left && options.native)
                    stack.end += (stack.end.empty() ? "" : "; ") + std::to_string(left) +
                                 " Python frame(s) could not be placed: no frame of this stack is named _PyEval_EvalFrameDefault"
                                 " (where the eval loop's code has no symbol at hand, its debug symbols name it)";
        if (crashed) {
            report.crash = CrashReport{*crash, stack, {}, {}, {}, {}, {}};
            if (!options.native) {  // the table shows the innermost frame only
                size_t physical = 0;
                while (physical < stack.frames.size() && stack.frames[physical].inlined) ++physical;
                stack.frames.resize(std::min(stack.frames.size(), physical + 1));
                stack.end.clear();
            }
        }
        row.nativeFrames = std::move(stack.frames);
        row.nativeEnd = std::move(stack.end);
    }
    if (crash && !report.crash) report.crash = CrashReport{*crash, {crash->lwp, {}, "the crashing thread is not in the core"}, {}, {}, {}, {}, {}};
}

namespace {

// CPython's fatal error, from the parameters of the function that prints it.
std::string fatalErrorOf(const Target& target, const std::vector<NativeFrame>& frames) {
    for (const auto& f : frames) {
        if (f.function != "fatal_error" && f.function != "_Py_FatalErrorFunc" && f.function != "_Py_FatalErrorFormat" &&
            f.function != "Py_FatalError")
            continue;
        std::string where, what;
        bool format = false;
        for (const auto& v : f.values) {
            if (v.kind != FrameValue::Kind::Parameter || !v.value) continue;
            auto text = target.readCString(v.value, kMaxMessage);
            if (!text) continue;
            if (v.name == "prefix" || v.name == "func") where = *text;
            if (v.name == "msg" || v.name == "format") what = *text;
            format = format || (v.name == "format" && text->find('%') != std::string::npos);
        }
        if (what.empty()) continue;
        std::string message = "Fatal Python error: ";
        if (!where.empty()) message.append(where).append(": ");
        message += what;
        if (format) message += "  (its format string: the values it prints are not read)";
        return message;
    }
    return {};
}

}  // namespace

void explainCrash(const Target& target, Report& report) {
    if (!report.crash) return;
    CrashReport& crash = *report.crash;
    crash.fatalError = fatalErrorOf(target, crash.stack.frames);
    // The strongest evidence first: a parameter, then a register, then a stack word; innermost
    // frame first within each.
    for (auto kind : {FrameValue::Kind::Parameter, FrameValue::Kind::Register, FrameValue::Kind::StackWord}) {
        for (size_t k = 0; k < crash.stack.frames.size() && k < kExplainFrames; ++k) {
            const NativeFrame& frame = crash.stack.frames[k];
            for (const auto& v : frame.values) {
                if (v.kind != kind || !v.value) continue;
                for (size_t i = 0; i < report.findings.size(); ++i) {
                    const Finding& f = report.findings[i];
                    if (f.tstate == v.value && findingInfo(f.code).crashValue && (!f.lwp || *f.lwp == crash.signal.lwp))
                        crash.explainedBy.push_back(i);
                }
                if (crash.explainedBy.empty()) continue;
                crash.tie = CrashReport::Tie{k, v};
                return;
            }
        }
    }
}

}  // namespace pytstates
