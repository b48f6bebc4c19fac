// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/tasks.h"
#include "symbols/cpython/asyncio_layout.h"
#include "commands/analysis/report.h"

#include "commands/analysis/frame_locals.h"

#include <elf.h>

#include <algorithm>
#include <stdexcept>

#include "commands/analysis/abort_context.h"
#include "commands/analysis/findings.h"
#include "commands/analysis/native_report.h"
#include "commands/analysis/no_runtime.h"
#include "commands/analysis/python_state.h"
#include "commands/analysis/wait_findings.h"
#include "commands/analysis/waits.h"
#include "commands/analysis/tstate_runners.h"
#include "symbols/cpython/tstate_memory.h"
#include "symbols/elf/elf_file.h"
#include "symbols/glibc/pthread_keys.h"
#include "symbols/glibc/thread_local.h"
#include "symbols/modules/debug_session.h"

namespace pytstates {

std::string threadStateWords(int state) {
    switch (state) {
        case ThreadState::kDetached: return "detached";
        case ThreadState::kAttached: return "attached";
        case ThreadState::kSuspended: return "suspended";
        default: return "state " + std::to_string(state);
    }
}

namespace {

const GlibcKeys* glibcFor(const std::vector<GlibcKeys>& all, const Target& target, size_t moduleIndex) {
    long ns = moduleIndex < target.modules().size() ? target.modules()[moduleIndex].linkMapNamespace : 0;
    for (const auto& k : all)
        if (k.linkMapNamespace == ns) return &k;
    return all.empty() ? nullptr : &all.front();
}

// CPython's own per-thread pointers: the current tstate and the PyGILState autoTSSkey slot.
void fillThreadRows(const Target& target, const std::vector<GlibcKeys>& glibc, Report& report) {
    report.threads.reserve(report.threads.size() + target.threads().size());
    for (const auto& t : target.threads()) {
        ThreadRow row;
        row.lwp = t.lwp;
        row.namespaceLwp = t.namespaceLwp;
        row.pthread = t.pthread;
        for (const auto& rt : report.runtimes) {
            const GlibcKeys* keys = glibcFor(glibc, target, rt.moduleIndex);
            if (!row.currentTstate && row.currentStatus.empty()) {
                if (hasProcessWideCurrent(rt.layout)) {
                    // <= 3.11: one process-wide pointer; it is this thread's when the tstate it
                    // names (live or freed) records this thread as its owner.
                    row.currentSource = "gilstate.tstate_current";
                    if (rt.tstateCurrent && tstateRecordsThread(target, rt.layout, rt.tstateCurrent, t.pthread))
                        row.currentTstate = rt.tstateCurrent;
                } else if (rt.tssTstate && keys && rt.moduleIndex < target.modules().size()) {
                    row.currentSource = "_Py_tss_tstate";
                    ThreadLocal tl = rt.tssTstate->kind == TlsLocation::Kind::ThreadPointerOffset
                                         ? readThreadPointerRelative(target, rt.tssTstate->offset, t.threadPointer)
                                         : readThreadLocal(target, *keys, target.modules()[rt.moduleIndex],
                                                           static_cast<uint64_t>(rt.tssTstate->offset), t);
                    if (tl.status == ThreadLocal::Status::Value) row.currentTstate = tl.value;
                    else row.currentStatus = describe(tl.status);
                }
            }
            if (rt.tssGilstate && !row.autotssKey && !row.autotssThreadLocal && keys && rt.moduleIndex < target.modules().size()) {
                ThreadLocal tl = rt.tssGilstate->kind == TlsLocation::Kind::ThreadPointerOffset
                                     ? readThreadPointerRelative(target, rt.tssGilstate->offset, t.threadPointer)
                                     : readThreadLocal(target, *keys, target.modules()[rt.moduleIndex],
                                                       static_cast<uint64_t>(rt.tssGilstate->offset), t);
                row.autotssThreadLocal = true;
                row.autotssRuntime = static_cast<size_t>(&rt - report.runtimes.data());
                row.autotssStatus = tl.status == ThreadLocal::Status::Value ? (tl.value ? "set" : "unset") : describe(tl.status);
                if (tl.status == ThreadLocal::Status::Value) row.autotssTstate = tl.value;
            }
            if (rt.autoTssKey && !row.autotssKey && keys) {
                KeySlot slot = readKeySlot(target, *keys, t.pthread, *rt.autoTssKey);
                row.autotssKey = rt.autoTssKey;
                row.autotssRuntime = static_cast<size_t>(&rt - report.runtimes.data());
                row.autotssStatus = describe(slot.status);
                if (slot.status == KeySlot::Status::Set || slot.status == KeySlot::Status::Stale) row.autotssTstate = slot.value;
            }
        }
        report.threads.push_back(std::move(row));
    }
}

void readInternals(const Target& target, const std::vector<GlibcKeys>& glibc, const ReportOptions& options,
                   const Pybind11ModuleScan& scan, Report& report) {
    report.internalsRead = true;
    for (size_t r = 0; r < report.runtimes.size(); ++r) {
        const GlibcKeys* keys = glibcFor(glibc, target, report.runtimes[r].moduleIndex);
        Pybind11Records found = findInternalsRecords(target, report.runtimes[r], options.types, scan);
        for (auto& local : found.moduleLocals) report.moduleLocals.push_back(std::move(local));
        for (const auto& k : found.nanobindKeys) {
            NanobindRecord nb = readNanobindRecord(target, report.runtimes[r].layout, *scan.nanobind, k.key, k.capsule, options.types);
            nb.interpreter = k.interpreter;
            nb.dictName = k.dictName;
            report.nanobind.push_back(std::move(nb));
        }
        for (auto& record : found.records) {
            InternalsView view;
            view.runtimeIndex = r;
            view.record = std::move(record);
            if (view.record.tlsKey && keys) {
                for (const auto& t : target.threads()) {
                    KeySlot slot = readKeySlot(target, *keys, t.pthread, *view.record.tlsKey);
                    if (slot.status == KeySlot::Status::Set || slot.status == KeySlot::Status::Stale)
                        view.values.push_back({t.lwp, slot.value, describe(slot.status)});
                }
            }
            report.internals.push_back(std::move(view));
        }
    }
}

}  // namespace

namespace {

// Every asyncio event loop and task of each runtime whose process has asyncio's C module (a
// runtime without it has no task to read, and costs nothing); a runtime whose version is not read
// yet says so in its scan's problem.
void readTasks(const Target& target, const ReportOptions& options, Report& report) {
    report.tasksRead = true;
    for (size_t r = 0; r < report.runtimes.size(); ++r) {
        if (!asyncioLoaded(target, report.runtimes[r])) continue;
        AsyncioLayout layout = asyncioLayout(target, report.runtimes[r], options.useDwarf);
        target.releaseDwarfTypes();  // as after the preparation: the memory goes to the tasks
        auto scan = scanAsyncio(target, report.runtimes[r], r, layout);
        if (!scan) continue;
        for (auto& task : scan->tasks)  // a running task's owner: the thread running its thread state
            if (task.tstate) task.lwp = report.lwpFor(task.tstate).value_or(0);
        if (!scan->problem.empty()) report.warnings.push_back("asyncio: " + scan->problem);  // JSON warnings[], text's ASYNCIO note
        report.asyncio.push_back(std::move(*scan));
    }
    markIdleLoops(report);
}

}  // namespace

Preparation prepareReport(const Target& target, const ReportOptions& options) {
    Preparation p;
    // --native symbolizes every frame of every thread with DWARF: many CUs of each debug file.
    if (options.native && options.useDwarf) target.debugSession(true).decompressDebugFiles();
    p.runtimes = findRuntimeCandidates(target, options.useDwarf);
    p.interpreterStateLayouts = prepareInterpreterStateLayouts(target, p.runtimes, options.useDwarf);
    if (options.internals || options.findings) p.pybind11 = scanBindingModules(target, options.useDwarf);
    p.native = std::make_shared<NativeStacks>(target, options.useDwarf);
    p.greenletModules = findGreenletModules(target, options.useDwarf);
    p.glibc = findGlibcKeys(target);  // libc's symbols and its constant thread_db descriptors
    target.releaseDwarfTypes();  // the layouts are known: the memory goes to reading the target
    return p;
}

Report buildReport(const Target& target, const ReportOptions& options) {
    return buildReport(target, options, prepareReport(target, options));
}

Report buildReport(const Target& target, const ReportOptions& options, const Preparation& preparation) {
    Report report;
    report.target.kind = target.kind();
    report.target.pid = target.pid();
    report.target.arch = target.arch().name;
    report.target.executable = target.executable();
    report.target.namespacePids = target.namespacePids();
    report.target.root = target.rootDirectory();
    report.target.sysroot = target.sysroot();
    for (const auto& m : target.modules()) {
        if (m.path.empty() || m.path[0] != '/') continue;
        ModuleFile f{m.path, m.resolvedPath, m.fileVia, m.deleted, m.buildIdInTarget, {}, m.elf ? "" : m.problem};
        if (m.debugElf && m.debugElf != m.elf) f.debugFile = m.debugElf->path();
        report.target.files.push_back(std::move(f));
    }
    report.warnings = target.warnings();
    // Every Python stack whole: a wait's holder may be any number of frames down.
    RuntimeSearch search = walkRuntimes(target, preparation.runtimes);
    report.runtimes = std::move(search.runtimes);
    report.rejectedRuntimes = std::move(search.rejected);
    if (report.runtimes.empty()) {
        NoRuntime none = explainNoRuntime(target, report.rejectedRuntimes);
        // A live process is asked about by pid: one that runs no Python is a mistaken pid. A core
        // of one still tells its crash, threads and native stacks (as pystack does).
        // A truncated core is read as far as it goes: the crash and the threads it holds.
        if ((!none.notPython && !none.truncated) || target.kind() != TargetKind::Core) throw std::runtime_error(none.why);
        report.noRuntime = none.why;
        // What process it was, since no interpreter says (the debuggers' targets have no NT_PRPSINFO).
        report.target.process = target.processFacts();
    }
    for (const auto& rt : report.runtimes)
        if (!rt.tssTstateNote.empty()) report.warnings.push_back(rt.modulePath + ": " + rt.tssTstateNote);
    const auto& glibc = preparation.glibc;
    if (glibc.empty()) report.warnings.push_back("no glibc with __pthread_keys found: thread-specific data is not read");
    fillThreadRows(target, glibc, report);
    // The rest reads the stacks the stop copied, the pages read so far, and what does not
    // change while the process runs (code, names) or is read from it and said so.
    // --locals of the thread states' frames: read with the frames, before a live target resumes.
    target.readingFor("locals");
    if (options.locals) readFrameLocals(target, report, FrameLocalsOf::ThreadStates);
    if (options.afterConsistentReads) options.afterConsistentReads();
    target.readingFor("thread-state attribution");
    attributeRunners(target, preparation.native.get(), report);
    target.readingFor("native stacks");
    if (preparation.native) readNativeStacks(target, *preparation.native, options, report.runtimes, report);
    target.readingFor("waits");
    if (preparation.native) readWaits(target, *preparation.native, options, report);
    target.readingFor("thread names and interpreter state");
    readPythonState(target, preparation.native.get(), options, preparation.interpreterStateLayouts.get(), report);
    target.readingFor("greenlets");
    for (size_t r = 0; options.greenlets && r < report.runtimes.size(); ++r) {
        auto scan = scanGreenlets(target, glibcFor(glibc, target, report.runtimes[r].moduleIndex), report.runtimes[r], r,
                                  preparation.greenletModules);
        if (scan) report.greenlets.push_back(std::move(*scan));
    }
    // and of the greenlets' saved frames, found by the scan just done.
    target.readingFor("greenlet locals");
    if (options.locals) readFrameLocals(target, report, FrameLocalsOf::Greenlets);
    target.readingFor("asyncio tasks");
    if (options.asyncio) readTasks(target, options, report);
    if (options.asyncio && options.locals) readFrameLocals(target, report, FrameLocalsOf::Tasks);
    target.readingFor("pybind11 internals");
    if (options.internals || options.findings) readInternals(target, glibc, options, preparation.pybind11, report);
    target.readingFor("findings");
    if (options.findings) addFindings(target, report);
    else addRuntimeFindings(report);
    if (options.findings) addWaitFindings(report);
    if (options.findings) markFinalizingDeadlocks(report);
    if (options.findings && options.asyncio) addTaskFindings(report);
    explainCrash(target, report);
    explainAbort(target, report);
    target.readingFor("");
    return report;
}

}  // namespace pytstates
