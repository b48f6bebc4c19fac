// SPDX-License-Identifier: Apache-2.0
// The streaming JSON writer against the renderer it replaced (a nlohmann tree and its dump): the
// same bytes for a report with every optional member set, with strings that are not UTF-8 or hold
// control characters, for each command; and an empty report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "commands/render/render.h"
#include "tests/unit/render_json_reference.h"

namespace pytstates {
namespace {

const std::string kBad = std::string("caf\xc3\xa9 \xff\xfe tab\there \"q\" \\ \x01\x1f\x7f end");

NativeFrame nativeFrame(const std::string& function, int n) {
    NativeFrame f;
    f.pc = 0x7f0000001000 + n;
    f.function = function;
    f.module = n % 2 ? "/usr/lib/libpython3.11.so.1.0" : kBad;
    f.offset = 0x1234 + n;
    f.file = n % 3 ? "ceval.c" : "";
    f.line = 100 + n;
    f.inlined = n % 2;
    f.tailCall = n % 3 == 1;
    f.values.push_back({FrameValue::Kind::Parameter, "tstate", 0x5000});
    f.values.push_back({FrameValue::Kind::Register, "rdi", 0x6000});
    f.values.push_back({FrameValue::Kind::Parameter, "tstate", 0x7000});  // a name twice: the last one
    f.values.push_back({FrameValue::Kind::Parameter, "a", 0x8000});
    f.python.push_back({0x9000, "run", kBad, 12, true});
    return f;
}

Finding finding(FindingCode code, std::optional<int> lwp, uint64_t tstate, std::vector<FindingSource> sources) {
    Finding f;
    f.code = code;
    f.lwp = lwp;
    f.tstate = tstate;
    f.sources = std::move(sources);
    return f;
}

// A wait whose words hold strings read from the target.
BlockedOn blockedOn(WaitKind kind, const std::string& function) {
    BlockedOn b;
    b.kind = kind;
    b.object = 0x99000;
    b.function = function;
    b.call = function;
    b.frame = 2;
    b.at = nativeFrame(function, 3);
    return b;
}

Report richReport(TargetKind kind) {
    Report r;
    r.target.kind = kind;
    r.target.pid = 4242;
    r.target.executable = kBad;
    r.target.namespacePids = {4242, 7};
    r.target.root = "/proc/4242/root";
    r.target.sysroot = "/srv/root";
    r.target.stoppedMs = 12.345;
    r.target.readAfterResume = std::vector<Target::PartRead>{{"greenlets", 10, 40960}, {"native stacks", 2, 8192}};
    r.target.files.push_back({"/usr/bin/python3", "/usr/bin/python3", "map_files", false, "abcd", "/usr/lib/debug/x.debug", ""});
    r.target.files.push_back({kBad, "", "", true, "", "", "not found"});
    CrashReport c;
    c.signal = {11, 6, true, -6, 0, 11, 0};
    c.stack.frames = {nativeFrame("abort", 0), nativeFrame(kBad, 1)};
    c.stack.end = "no CFI";
    c.explainedBy = {0, 1};
    c.tie = CrashReport::Tie{1, FrameValue{FrameValue::Kind::Parameter, kBad, 0x20000}};  // worded from the facts, kBad in it
    c.fatalError = "Fatal Python error: PyThreadState_Get";
    c.abort = AbortInfo{"uncaught-exception", "std::runtime_error", "ValueError", kBad, "what() unread"};
    r.crash = c;

    Runtime rt;
    rt.address = 0x555000;
    rt.modulePath = kBad;
    rt.version = "3.11.2";
    rt.layout.source = "dwarf";
    rt.layout.dwarfCached = true;
    rt.layout.sources = {{"PyThreadState.frame", "dwarf"}, {"PyInterpreterState.next", "table"}};
    rt.notes = {"note one", kBad};
    Interpreter interp;
    interp.address = 0x10000;
    interp.id = 0;
    interp.main = true;
    interp.gilKnown = true;
    interp.gilHolder = 0x20000;
    interp.gilHolderSource = Interpreter::GilSource::TstateCurrent;
    interp.gilTakenBy = 0x21000;  // the holder swapped in 0x20000 after taking the GIL with 0x21000
    interp.note = kBad;
    for (int i = 0; i < 5; ++i) {
        ThreadState ts;
        ts.address = 0x20000 + 0x1000 * i;
        if (i != 3) ts.id = i + 1;
        ts.threadId = 0x7f00000 + i;
        if (i % 2) ts.nativeThreadId = 100 + i;
        if (i == 2) ts.state = 1;
        ts.frames.push_back({0xa000, kBad, "x.py", 3, false});
        ts.frames.push_back({0xb000, "main", "<string>", -1, true});
        if (i == 4) ts.note = kBad;
        interp.tstates.push_back(ts);
    }
    rt.interpreters.push_back(interp);
    Interpreter sub;
    sub.address = 0x30000;
    sub.id = 1;
    sub.gilDisabled = true;
    rt.interpreters.push_back(sub);
    Interpreter unknown;
    unknown.address = 0x40000;
    unknown.id = 2;
    rt.interpreters.push_back(unknown);
    r.runtimes.push_back(rt);

    // The interpreters' own state: finalizing on a thread, running with the GC collecting, unknown.
    InterpreterStateView finalizing;
    finalizing.finalizing = true;
    finalizing.finalizingTstate = 0x20000;
    finalizing.finalizingRuntime = true;
    finalizing.finalizingLwp = 100;
    finalizing.finalizingEvidence = "thread state";
    finalizing.gcCollecting = false;
    finalizing.layoutSource = kBad;
    r.interpreterStates[0x10000] = finalizing;
    InterpreterStateView collecting;
    collecting.finalizing = false;
    collecting.gcCollecting = true;
    collecting.gcLwp = 101;
    collecting.layoutSource = "table (CPython 3.13.0)";
    r.interpreterStates[0x30000] = collecting;
    InterpreterStateView unknownState;
    unknownState.layoutSource = "no DWARF and no table";
    r.interpreterStates[0x40000] = unknownState;

    r.places[0x20000] = {100, "current", 0, 100, false, false};
    r.places[0x21000] = {101, "frames on its stack", 2, 100, true, false};
    r.places[0x22000] = {std::nullopt, "", 0, std::nullopt, false, true};
    r.places[0x23000] = {std::nullopt, "", 0, std::nullopt, false, false};
    r.places[0x24000] = {std::nullopt, "", 0, 101, false, false};

    GreenletScan scan;
    scan.runtimeIndex = 0;
    scan.module = kBad;
    scan.version = "3.1.0";
    scan.layoutSource = "table";
    scan.problem = kBad;
    scan.gcObjects = 2000000;
    scan.rejected = 3;
    scan.threads.push_back({100, 0x61000, 0x62000, 0});
    scan.threads.push_back({101, 0x63000, 0x64000, 0x65000});
    for (int i = 0; i < 4; ++i) {
        GreenletInfo g;
        g.address = 0x70000 + i;
        g.typeName = i ? "greenlet.greenlet" : kBad;
        g.state = "suspended";
        g.main = i == 0;
        g.parent = i ? 0x70000 : 0;
        g.interp = 0x10000;
        g.lwp = i < 2 ? 100 : i == 2 ? 0 : 999;
        g.frames.push_back({0xc000, "switch", kBad, 9, false});
        if (i == 1) g.note = kBad;
        scan.greenlets.push_back(g);
    }
    r.greenlets.push_back(scan);

    for (int lwp : {100, 101, 102}) {
        ThreadRow t;
        t.lwp = lwp;
        t.namespaceLwp = lwp == 101 ? 3 : 0;
        t.pthread = 0x7f00000 + lwp;
        t.currentTstate = lwp == 100 ? 0x20000 : 0;
        t.currentSource = lwp == 102 ? "" : "gilstate.tstate_current";
        t.currentStatus = lwp == 102 ? kBad : "";
        t.autotssTstate = lwp == 101 ? 0x21000 : 0;
        if (lwp != 102) t.autotssKey = 2;
        t.autotssThreadLocal = lwp == 102;
        t.debuggerThread = lwp == 100 ? 1 : 0;
        t.nativeFrames = {nativeFrame("take_gil", lwp), nativeFrame(kBad, lwp + 1)};
        t.nativeEnd = lwp == 101 ? kBad : "";
        if (lwp != 102) {
            BlockedOn b;
            b.kind = lwp == 100 ? WaitKind::Mutex : WaitKind::None;
            b.object = lwp == 100 ? 0x99000 : 0;
            if (lwp == 100) b.heldBy = 101;
            b.function = lwp == 100 ? "pthread_mutex_lock" : "";
            if (lwp == 100) b.frame = 2;
            b.call = lwp == 100 ? kBad : "";
            b.layoutSource = lwp == 100 ? "dwarf" : "";
            b.note = lwp == 100 ? kBad : "";
            b.at = nativeFrame(lwp == 100 ? kBad : "", 4);
            if (lwp == 100) b.pythonAt = PyFrame{0xd000, "wait", kBad, 4, false};
            b.ownerReadLate = lwp == 100;
            b.duringFinalization = lwp == 101;
            t.blockedOn = b;
        }
        // Thread names: Python's, the kernel's (a name is the target's bytes), none.
        if (lwp == 100) t.name = "MainThread";
        if (lwp == 101) t.name = kBad;
        t.nameSource = lwp == 100 ? "threading" : lwp == 101 ? "kernel" : "";
        r.threads.push_back(t);
    }

    InternalsView view;
    view.record.id.raw = "__pybind11_internals_v4_gcc_libstdcpp_cxxabi1011__";
    view.record.id.version = 4;
    view.record.interpreter = 0x10000;
    view.record.dictName = "builtins";
    view.record.address = 0xe000;
    view.record.istate = 0x10000;
    view.record.tlsKey = 3;
    view.record.layout.source = "table";
    view.record.modules = {{kBad, true, "its internals_pp_manager holds this record"}, {"/m2.so", false, ""}};
    view.record.types = {{"Pet", "pet::Pet"}, {kBad, kBad}};
    view.record.problem = kBad;
    view.values = {{100, 0x20000, "set"}, {101, 0x99999, "stale (slot of a deleted key)"}};
    r.internals.push_back(view);
    InternalsView bare;
    bare.record.id.raw = "__pybind11_internals_v5__";
    r.internals.push_back(bare);
    r.moduleLocals.push_back({"__pybind11_module_local_v5_x", 0x10000, "state dict", 0x7777, kBad});
    r.moduleLocals.push_back({"__pybind11_module_local_v5_y", 0x10000, "state dict", 0x8888, ""});
    NanobindRecord nb;
    nb.key = "__nb_internals_v19_system__";
    nb.abiTag = "v19_system";
    nb.version = 19;
    nb.interpreter = 0x10000;
    nb.dictName = "builtins";
    nb.address = 0xf000;
    nb.modules = {{kBad, true, "its static"}};
    nb.types = {{"Dog", "Dog"}};
    nb.layout = "table";
    nb.problem = kBad;
    r.nanobind.push_back(nb);

    // Sources and words that carry strings from the target (a record's ID, a Python type's name).
    Finding stale = finding(FindingCode::StaleTstate, 100, 0x99999,
                            {source::Pybind11Key{100, 0x99999, 3, kBad, true}, source::Current{100, 0x99999, "_Py_tss_tstate"}});
    stale.memory = TstateMemory{TstateMemory::Kind::Reused, 0, std::nullopt, 0, kBad};
    Finding::HistoryEntry h;
    h.event.seq = 7;
    h.event.function = "PyThreadState_Delete";
    h.event.tstate = 0x99999;
    h.event.lwp = 101;
    h.event.key = 3;
    h.event.ms = 1.5;
    h.event.frames = {{0x1000, "f", kBad}, {0x2000, "", ""}};
    h.source = kBad;
    stale.history.push_back(h);
    h.source = "";
    h.event.key.reset();
    h.event.ms = 20;
    stale.history.push_back(h);
    r.findings.push_back(stale);
    Finding deadlock = finding(FindingCode::Deadlock, 100, 0,
                               {source::NativeStack{100, 2, kBad, false}, source::LockOwner{WaitKind::Mutex, 0x99000, "dwarf", true}});
    CycleStep mutexStep;
    mutexStep.lwp = 100;
    mutexStep.waitsFor = WaitKind::Mutex;
    mutexStep.object = 0x99000;
    mutexStep.heldBy = 101;
    mutexStep.at = nativeFrame(kBad, 2);
    mutexStep.pythonAt = PyFrame{0xd000, "wait", kBad, 4, false};
    mutexStep.call = kBad;
    mutexStep.ownerReadLate = true;
    mutexStep.holdsGil = true;
    deadlock.cycle.push_back(mutexStep);
    CycleStep gilStep;
    gilStep.lwp = 101;
    gilStep.waitsFor = WaitKind::Gil;
    deadlock.cycle.push_back(gilStep);
    r.findings.push_back(deadlock);
    Finding gil = finding(FindingCode::GilHeldWhileBlocked, std::nullopt, 0x20000, {source::NativeStack{101, std::nullopt, kBad, true}});
    gil.blocked = blockedOn(WaitKind::Syscall, kBad);
    gil.function = kBad;
    gil.waiters = {101, 102};
    r.findings.push_back(gil);
    Finding stop = finding(FindingCode::StopTheWorldBlocked, 102, 0, {source::AttachedState{0x30000, 102, "table"}});
    stop.blocked = blockedOn(WaitKind::Condition, "pthread_cond_wait");
    stop.stopFor = kBad;
    stop.function = "pthread_cond_wait";
    stop.waiters = {100};
    r.findings.push_back(stop);
    Finding stopCycle = finding(FindingCode::Deadlock, 100, 0, {});
    auto step = [](int lwp, WaitKind kind, uint64_t object, int heldBy, const char* call, bool holdsGil) {
        CycleStep s;
        s.lwp = lwp;
        s.waitsFor = kind;
        s.object = object;
        s.heldBy = heldBy;
        s.call = call;
        s.holdsGil = holdsGil;
        return s;
    };
    stopCycle.cycle.push_back(step(100, WaitKind::StopTheWorld, 0x30000, 102, "gc", false));
    stopCycle.cycle.push_back(step(102, WaitKind::Mutex, 0x99000, 100, "", true));
    r.findings.push_back(stopCycle);
    r.waitNotes = {kBad};
    r.warnings = {"w", kBad};
    return r;
}

void expectSame(const Report& report, Command command, bool types) {
    RenderOptions options;
    options.command = command;
    options.types = types;
    std::string want = reference::renderJsonTree(report, options);
    std::string got = renderJson(report, options);
    EXPECT_EQ(got, want);
    EXPECT_EQ(nlohmann::json::parse(got).dump(2) + "\n", got);  // strict JSON, keys in nlohmann's order
}

TEST(RenderJsonTest, SameBytesAsTheTreeForEveryMember) {
    for (TargetKind kind : {TargetKind::Core, TargetKind::Live}) {
        Report r = richReport(kind);
        for (Command c : {Command::Check, Command::Tstates, Command::Internals})
            for (bool types : {false, true}) expectSame(r, c, types);
    }
}

TEST(RenderJsonTest, SameBytesForAnEmptyReport) {
    Report r;
    for (Command c : {Command::Check, Command::Tstates, Command::Internals}) expectSame(r, c, false);
    r.target.stoppedMs = 7.0;
    r.target.readAfterResume = std::vector<Target::PartRead>{};
    CrashReport c;
    r.crash = c;
    expectSame(r, Command::Check, false);
}

}  // namespace
}  // namespace pytstates
