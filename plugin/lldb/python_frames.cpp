// SPDX-License-Identifier: Apache-2.0
#include "plugin/lldb/python_frames.h"

#include <cstring>
#include <string>

namespace pytstates::lldbfront {

namespace {

// The eval loop, and its parts the compiler moved out (_PyEval_EvalFrameDefault.cold): one frame.
bool isEvalLoop(const char* name) {
    static const char kEval[] = "_PyEval_EvalFrameDefault";
    if (!name) return false;
    size_t n = sizeof kEval - 1;
    return std::strncmp(name, kEval, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

const char* nameOf(lldb::SBFrame& frame) {
    if (const char* name = frame.GetFunctionName()) return name;
    lldb::SBSymbol symbol = frame.GetSymbol();
    return symbol.IsValid() ? symbol.GetName() : nullptr;
}

// What pyt selected last: on which process, stop and thread, which Python frame, and the lldb
// frame it selected for it.
struct Selection {
    uint32_t process = 0, stop = 0;
    uint64_t thread = 0;
    size_t k = 0;
    uint32_t cFrame = UINT32_MAX;
};
std::optional<Selection> last;

int64_t groupOf(const nlohmann::json& frame) {
    auto it = frame.find("eval_group");
    return it != frame.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

bool sameStop(const Selection& s, lldb::SBThread thread) {
    lldb::SBProcess process = thread.GetProcess();
    return s.process == process.GetUniqueID() && s.stop == process.GetStopID() && s.thread == thread.GetThreadID();
}

}  // namespace

std::vector<uint32_t> evalFrameIndexes(lldb::SBThread thread) {
    std::vector<uint32_t> out;
    uint32_t count = thread.GetNumFrames();
    for (uint32_t i = 0; i < count; ++i) {
        lldb::SBFrame frame = thread.GetFrameAtIndex(i);
        if (!frame.IsValid() || frame.IsInlined()) continue;
        if (isEvalLoop(nameOf(frame))) out.push_back(i);
    }
    return out;
}

std::optional<size_t> selectedPythonFrame(lldb::SBThread thread, const nlohmann::json& frames, const std::vector<uint32_t>& evals) {
    if (!frames.is_array() || frames.empty()) return std::nullopt;
    uint32_t selected = thread.GetSelectedFrame().GetFrameID();
    if (last && sameStop(*last, thread) && last->k < frames.size() && last->cFrame == selected) return last->k;
    for (size_t g = 0; g < evals.size(); ++g) {
        if (evals[g] < selected) continue;
        for (size_t k = 0; k < frames.size(); ++k)
            if (groupOf(frames[k]) == static_cast<int64_t>(g)) return k;
        break;
    }
    return size_t{0};
}

bool inCallFromPython(lldb::SBThread thread, uint32_t evalFrame) {
    static const char* const kNames[] = {"take_gil",          "collect",          "gc_collect_main", "gc_collect_full",
                                         "gc_collect_young",  "gc_collect_increment", "cfunction_call", "wrapper_call"};
    static const char kVectorcall[] = "cfunction_vectorcall_";
    for (uint32_t i = thread.GetSelectedFrame().GetFrameID(); i < evalFrame; ++i) {
        lldb::SBFrame frame = thread.GetFrameAtIndex(i);
        const char* name = frame.IsValid() ? nameOf(frame) : nullptr;
        if (!name) continue;
        if (std::strncmp(name, kVectorcall, sizeof kVectorcall - 1) == 0) return true;
        for (const char* known : kNames)
            if (std::strcmp(name, known) == 0) return true;
    }
    return false;
}

std::optional<uint32_t> selectPythonFrame(lldb::SBThread thread, const nlohmann::json& frames, size_t k,
                                          const std::vector<uint32_t>& evals) {
    lldb::SBProcess process = thread.GetProcess();
    Selection s{process.GetUniqueID(), process.GetStopID(), thread.GetThreadID(), k, UINT32_MAX};
    int64_t g = k < frames.size() ? groupOf(frames[k]) : -1;
    std::optional<uint32_t> chosen;
    if (g >= 0 && static_cast<size_t>(g) < evals.size()) {
        thread.SetSelectedFrame(evals[g]);
        chosen = evals[g];
    }
    s.cFrame = thread.GetSelectedFrame().GetFrameID();
    last = s;
    return chosen;
}

}  // namespace pytstates::lldbfront
