// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/abort_context.h"

#include <csignal>
#include <set>

#include "symbols/cxxabi/thrown_exception.h"
#include "symbols/modules/module_files.h"
#include "symbols/pybind11/error_already_set.h"

namespace pytstates {

namespace {

bool hasFunction(const std::vector<NativeFrame>& frames, std::initializer_list<const char*> names, size_t* at = nullptr) {
    for (size_t i = 0; i < frames.size(); ++i)
        for (const char* n : names)
            if (frames[i].function == n) {
                if (at) *at = i;
                return true;
            }
    return false;
}

// glibc's __abort_msg: the text abort() was asked to show (assert's line, malloc's complaint).
std::string abortMessage(const Target& target) {
    for (const auto& m : target.modules()) {
        if (m.path.find("libc.so") == std::string::npos) continue;
        auto sym = findModuleSymbol(m, "__abort_msg");
        if (!sym) continue;
        auto msg = target.readPointer(m.bias + sym->value);
        if (!msg || !*msg) return {};
        auto text = target.readCString(*msg + 4, 4096);  // struct abort_msg_s { unsigned int size; char msg[]; }
        if (!text) return {};
        while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
        return *text;
    }
    return {};
}

// The thread-state checks whose failure aborts: on a thread a finding names, the abort is that
// finding's most likely effect.
void tieToFindings(Report& report) {
    CrashReport& crash = *report.crash;
    if (!crash.explainedBy.empty()) return;
    size_t at = 0;
    if (!hasFunction(crash.stack.frames,
                     {"pybind11::pybind11_fail", "PyGILState_Check", "PyThreadState_Get", "_PyThreadState_GET", "_Py_FatalErrorFunc",
                      "_Py_FatalError_TstateNULL", "Py_FatalError", "PyGILState_Release", "PyEval_RestoreThread",
                      "PyEval_AcquireThread", "pybind11::gil_scoped_acquire::gil_scoped_acquire", "pybind11::gil_scoped_release::~gil_scoped_release"},
                     &at))
        return;
    std::set<std::string> which;
    for (size_t i = 0; i < report.findings.size(); ++i) {
        const Finding& f = report.findings[i];
        const FindingCodeInfo& info = findingInfo(f.code);
        bool onThread = info.abortTie == AbortTie::OnItsThread && f.lwp && *f.lwp == crash.signal.lwp;
        if (!onThread && info.abortTie != AbortTie::AnyThread) continue;
        crash.explainedBy.push_back(i);
        which.insert(info.name);
    }
    if (which.empty()) return;
    crash.tie = CrashReport::Tie{at, std::nullopt};
}

}  // namespace

void explainAbort(const Target& target, Report& report) {
    if (!report.crash || report.crash->signal.signal != SIGABRT) return;
    CrashReport& crash = *report.crash;
    const auto& frames = crash.stack.frames;
    // A SIGABRT sent by another process (a watchdog) is no abort(): the thread did not call it.
    if (!hasFunction(frames, {"abort", "__GI_abort", "__libc_abort"})) return;
    AbortInfo info;
    if (!crash.fatalError.empty()) {
        info.kind = "fatal-error";
        info.message = crash.fatalError;
    } else if (hasFunction(frames, {"__assert_fail", "__assert_fail_base", "__GI___assert_fail", "__assert_perror_fail"})) {
        info.kind = "assert";
        info.message = abortMessage(target);
    } else if (hasFunction(frames, {"std::terminate", "__cxxabiv1::__terminate", "__cxa_throw", "__cxa_rethrow",
                                    "__cxa_call_terminate", "__gnu_cxx::__verbose_terminate_handler"})) {
        info.kind = "uncaught-exception";
        const OsThread* thread = nullptr;
        for (const auto& t : target.threads())
            if (t.lwp == crash.signal.lwp) thread = &t;
        if (thread)
            if (auto e = findThrownException(target, *thread)) {
                info.type = e->type;
                info.message = e->message;
                if (e->type == "pybind11::error_already_set" && !report.runtimes.empty())
                    if (auto py = readErrorAlreadySet(target, report.runtimes.front().layout, e->object)) {
                        info.pythonType = py->type;
                        info.message = py->message;
                    }
            }
        if (info.type.empty()) info.note = "the thrown object was not found on the thread's stack";
    } else {
        std::string msg = abortMessage(target);
        if (msg.empty()) return;
        info.kind = "abort-message";
        info.message = msg;
    }
    crash.abort = info;
    tieToFindings(report);
}

}  // namespace pytstates
