// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/python_state.h"

#include "symbols/cpython/interpreter_state.h"
#include "symbols/cpython/thread_names.h"

namespace pytstates {

namespace {

void nameThreads(const Target& target, Report& report) {
    std::map<uint64_t, std::string> byIdent;
    std::map<int64_t, PythonThreadNames::ByNativeId> byNativeId;
    uint64_t mainIdent = 0;
    int64_t mainNativeId = 0;
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters) {
            PythonThreadNames names = readPythonThreadNames(target, rt, interp);
            byIdent.insert(names.byIdent.begin(), names.byIdent.end());  // the first interpreter's name wins
            byNativeId.insert(names.byNativeId.begin(), names.byNativeId.end());
            if (!mainIdent && !mainNativeId && interp.main) {
                mainIdent = names.mainIdent;
                mainNativeId = names.mainNativeId;
            }
        }
    for (auto& row : report.threads) {
        auto ident = byIdent.find(row.pthread);
        auto native = byNativeId.find(row.lwp);
        if (ident != byIdent.end() && row.pthread) {
            row.name = ident->second;
            row.nameSource = "threading";
            row.threadingMain = mainIdent && row.pthread == mainIdent;
        } else if (native != byNativeId.end() && (!row.pthread || !native->second.ident)) {
            // by the native id only where the ident cannot say (see ByNativeId)
            row.name = native->second.name;
            row.nameSource = "threading";
            row.threadingMain = mainNativeId && row.lwp == mainNativeId;
        } else if (auto comm = target.threadComm(row.lwp)) {
            row.name = *comm;
            row.nameSource = "kernel";
        }
    }
}

// The first thread whose stack runs a function `matches` accepts, by its symbol tables' names.
template <typename Match>
std::optional<int> threadRunning(const Target& target, NativeStacks* stacks, Match matches) {
    if (!stacks || !stacks->unavailable().empty()) return std::nullopt;
    for (const auto& t : target.threads())
        for (const auto& span : stacks->spans(t))
            if (matches(span.function)) return t.lwp;
    return std::nullopt;
}

void readInterpreterStates(const Target& target, NativeStacks* stacks, const ReportOptions& options, const InterpreterStateLayouts* prepared,
                           Report& report) {
    for (const auto& rt : report.runtimes) {
        const InterpreterStateLayout* known = prepared ? prepared->find(rt) : nullptr;
        InterpreterStateLayout layout = known ? *known : interpreterStateLayout(target, rt, options.useDwarf);
        for (const auto& interp : rt.interpreters) {
            InterpreterRunState run = readInterpreterRunState(target, rt, interp, layout);
            InterpreterStateView view;
            view.layoutSource = layout.source;
            if (run.finalizing) view.finalizing = *run.finalizing != 0;
            view.finalizingTstate = run.finalizing.value_or(0);
            view.finalizingRuntime = run.finalizingFromRuntime;
            if (view.finalizingTstate) {
                if (auto lwp = report.lwpFor(view.finalizingTstate)) {
                    view.finalizingLwp = lwp;
                    view.finalizingEvidence = "thread state";
                } else if (auto lwp = threadRunning(target, stacks, isFinalizeFunction)) {
                    view.finalizingLwp = lwp;
                    view.finalizingEvidence = "native stack";
                }
            }
            view.gcCollecting = run.gcCollecting;
            if (run.gcCollecting.value_or(false)) view.gcLwp = threadRunning(target, stacks, isGcCollectFunction);
            report.interpreterStates[interp.address] = view;
        }
    }
}

// The interpreter a thread runs in: the one listing its current (or PyGILState) thread state,
// else its runtime's main one. A thread that waits for the GIL at exit has had its state deleted
// by Py_FinalizeEx (_PyThreadState_DeleteExcept): the main interpreter's GIL is the one it waits for.
std::pair<const Runtime*, const Interpreter*> interpreterOf(const Report& report, const ThreadRow& row) {
    for (uint64_t ts : {row.currentTstate, row.autotssTstate}) {
        if (!ts) continue;
        for (const auto& rt : report.runtimes)
            for (const auto& interp : rt.interpreters)
                for (const auto& state : interp.tstates)
                    if (state.address == ts) return {&rt, &interp};
    }
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters)
            if (interp.main) return {&rt, &interp};
    return {nullptr, nullptr};
}

void markGilWaits(Report& report) {
    for (auto& row : report.threads) {
        if (!row.blockedOn || row.blockedOn->kind != WaitKind::Gil) continue;
        auto [rt, interp] = interpreterOf(report, row);
        if (!interp) continue;
        auto it = report.interpreterStates.find(interp->address);
        if (it != report.interpreterStates.end() && it->second.finalizing.value_or(false) && it->second.finalizingLwp != row.lwp)
            row.blockedOn->duringFinalization = true;
    }
}

}  // namespace

const InterpreterStateLayout* InterpreterStateLayouts::find(const Runtime& runtime) const {
    for (const auto& e : entries)
        if (e.moduleIndex == runtime.moduleIndex && e.minor == runtime.layout.minor && e.freeThreaded == runtime.layout.freeThreaded)
            return &e.layout;
    return nullptr;
}

std::shared_ptr<const InterpreterStateLayouts> prepareInterpreterStateLayouts(const Target& target, const RuntimeCandidates& runtimes,
                                                                              bool useDwarf) {
    auto layouts = std::make_shared<InterpreterStateLayouts>();
    for (const auto& rt : runtimes.candidates) {
        if (layouts->find(rt)) continue;
        layouts->entries.push_back({rt.moduleIndex, rt.layout.minor, rt.layout.freeThreaded, interpreterStateLayout(target, rt, useDwarf)});
    }
    return layouts;
}

void readPythonState(const Target& target, NativeStacks* stacks, const ReportOptions& options, const InterpreterStateLayouts* prepared,
                     Report& report) {
    nameThreads(target, report);
    readInterpreterStates(target, stacks, options, prepared, report);
    markGilWaits(report);
}

void markFinalizingDeadlocks(Report& report) {
    std::map<int, const ThreadRow*> rows;
    for (const auto& row : report.threads) rows[row.lwp] = &row;
    for (auto& f : report.findings) {
        if (f.code != FindingCode::Deadlock) continue;
        for (const auto& step : f.cycle) {
            auto row = rows.find(step.lwp);
            if (row == rows.end() || !row->second->blockedOn || !row->second->blockedOn->duringFinalization) continue;
            auto [rt, interp] = interpreterOf(report, *row->second);
            f.finalizingGilWait = true;
            f.finalizingMinor = rt ? rt->layout.minor : 0;
            if (interp)
                if (auto it = report.interpreterStates.find(interp->address); it != report.interpreterStates.end())
                    f.finalizingLwp = it->second.finalizingLwp;
            break;
        }
    }
}

}  // namespace pytstates
