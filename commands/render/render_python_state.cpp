// SPDX-License-Identifier: Apache-2.0
#include "commands/render/render_python_state.h"

#include "commands/render/text_encoding.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

// A name read from the target, quoted: control characters and the like escaped (shown), and the
// quote itself, so the name cannot end the quotes early.
std::string quoted(const std::string& name) {
    std::string out = "\"";
    for (char c : shown(name)) {
        if (c == '"') out += "\\x22";
        else out += c;
    }
    return out + "\"";
}

// threading's main thread on another thread than the process's first (whose LWP is the pid): an
// embedder's worker that imported threading first. Its "MainThread" would mislead unsaid.
bool notFirstThread(const Report& report, const ThreadRow& row) {
    return row.threadingMain && report.target.pid && row.lwp != report.target.pid;
}

// A thread's Python name, quoted, and why a "MainThread" that is not the first thread is called so.
std::string pythonName(const Report& report, const ThreadRow& row) {
    return quoted(*row.name) + (notFirstThread(report, row) ? " (threading's main thread, though not the process's first thread: "
                                                              "threading was first imported on it)"
                                                            : "");
}

}  // namespace

std::string threadNameWords(const Report& report, const ThreadRow& row) {
    if (!row.name) return "";
    return row.nameSource == "threading" ? "  name " + pythonName(report, row) : "  comm " + quoted(*row.name);
}

std::string tstateNameWords(const Report& report, uint64_t tstate) {
    auto lwp = report.lwpFor(tstate);
    if (!lwp) return "";
    for (const auto& row : report.threads)
        if (row.lwp == *lwp && row.name && row.nameSource == "threading") return "  " + pythonName(report, row);
    return "";
}

std::string lwpNameWords(const Report& report, int lwp) {
    for (const auto& row : report.threads)
        if (row.lwp == lwp && row.name && row.nameSource == "threading")
            return " " + quoted(*row.name) + (notFirstThread(report, row) ? " (threading's main thread, not the process's first)" : "");
    return "";
}

std::string interpreterStateWords(const Report& report, const Interpreter& interp) {
    auto it = report.interpreterStates.find(interp.address);
    if (it == report.interpreterStates.end()) return "";
    const InterpreterStateView& v = it->second;
    std::string out = "state: ";
    if (!v.finalizing) {
        out += "unknown (" + v.layoutSource + ")";
    } else if (!*v.finalizing) {
        out += "running";
    } else {
        out += "finalizing (" + std::string(v.finalizingRuntime ? "the runtime: Py_FinalizeEx" : "Py_FinalizeEx or Py_EndInterpreter");
        out += v.finalizingLwp ? " on LWP " + std::to_string(*v.finalizingLwp) : std::string(" on no thread found");
        out += ", thread state " + hexAddress(v.finalizingTstate) + ")";
    }
    if (!v.gcCollecting) out += "  GC: unknown";
    else if (!*v.gcCollecting) out += "  GC: not collecting";
    else out += "  GC: collecting" + (v.gcLwp ? " on LWP " + std::to_string(*v.gcLwp) : std::string(" (no thread's stack shows the collection)"));
    return out;
}

std::string finalizingWaitWords(const BlockedOn& b) {
    return b.duringFinalization ? "; its runtime is finalizing: it will never get the GIL back" : "";
}

}  // namespace pytstates
