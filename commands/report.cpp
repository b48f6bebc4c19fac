#include "commands/report.h"

#include <cstdio>
#include <stdexcept>

#include "symbols/glibc/pthread_keys.h"

namespace pytstates {

std::string hexAddress(uint64_t value) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
    return buf;
}

namespace {

// Which OS thread each tstate belongs to: its thread_id is the thread's struct pthread
// (== fs_base on x86_64); native_thread_id (3.11+) is the LWP itself.
void matchThreads(const Target& target, Report& report) {
    std::map<uint64_t, int> lwpOfPthread;
    std::map<int, bool> lwpExists;
    for (const auto& t : target.threads()) {
        lwpOfPthread[t.threadPointer] = t.lwp;
        lwpExists[t.lwp] = true;
    }
    for (const auto& rt : report.runtimes)
        for (const auto& interp : rt.interpreters)
            for (const auto& ts : interp.tstates) {
                auto it = lwpOfPthread.find(ts.threadId);
                if (it != lwpOfPthread.end())
                    report.lwpOfTstate[ts.address] = it->second;
                else if (ts.nativeThreadId && lwpExists.count(static_cast<int>(*ts.nativeThreadId)))
                    report.lwpOfTstate[ts.address] = static_cast<int>(*ts.nativeThreadId);
            }
}

const GlibcKeys* keysForNamespace(const std::vector<GlibcKeys>& all, long ns) {
    for (const auto& k : all)
        if (k.linkMapNamespace == ns) return &k;
    return all.empty() ? nullptr : &all.front();
}

void fillThreadRows(const Target& target, Report& report) {
    auto glibc = findGlibcKeys(target);
    const auto& modules = target.modules();
    for (const auto& t : target.threads()) {
        ThreadRow row;
        row.lwp = t.lwp;
        row.pthread = t.threadPointer;
        for (const auto& rt : report.runtimes) {
            // <= 3.11: tstate_current is process-wide; it is this thread's when it names a tstate
            // whose thread_id is this thread.
            if (!row.currentTstate && rt.tstateCurrent) {
                for (const auto& interp : rt.interpreters)
                    for (const auto& ts : interp.tstates)
                        if (ts.address == rt.tstateCurrent && ts.threadId == t.threadPointer) row.currentTstate = ts.address;
            }
            if (rt.autoTssKey && !row.autotssKey) {
                long ns = rt.moduleIndex < modules.size() ? modules[rt.moduleIndex].linkMapNamespace : 0;
                if (const GlibcKeys* keys = keysForNamespace(glibc, ns)) {
                    KeySlot slot = readKeySlot(target, *keys, t.threadPointer, *rt.autoTssKey);
                    row.autotssKey = rt.autoTssKey;
                    row.autotssStatus = describe(slot.status);
                    if (slot.status == KeySlot::Status::Set || slot.status == KeySlot::Status::Stale)
                        row.autotssTstate = slot.value;
                }
            }
        }
        report.threads.push_back(row);
    }
}

}  // namespace

Report buildReport(const Target& target, const ReportOptions& options) {
    Report report;
    report.target.kind = target.kind();
    report.target.pid = target.pid();
    report.target.executable = target.executable();
    report.warnings = target.warnings();
    RuntimeSearch search = findRuntimes(target, options.maxFrames);
    report.runtimes = std::move(search.runtimes);
    report.rejectedRuntimes = std::move(search.rejected);
    if (report.runtimes.empty()) {
        std::string why = "no initialised CPython runtime in the target";
        if (!report.rejectedRuntimes.empty()) why += " (" + report.rejectedRuntimes.front() + ")";
        throw std::runtime_error(why);
    }
    matchThreads(target, report);
    fillThreadRows(target, report);
    if (report.runtimes.size() > 1) {
        Finding f;
        f.code = "multiple-runtimes";
        f.severity = "info";
        f.message = std::to_string(report.runtimes.size()) + " initialised copies of CPython are loaded:";
        for (const auto& rt : report.runtimes) f.message += " " + rt.modulePath + " (" + rt.version + ", _PyRuntime " + hexAddress(rt.address) + ")";
        report.findings.push_back(f);
    }
    return report;
}

}  // namespace pytstates
