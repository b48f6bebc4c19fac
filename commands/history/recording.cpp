// SPDX-License-Identifier: Apache-2.0
#include "commands/history/recording.h"

#include <fstream>
#include <map>
#include <stdexcept>

#include "commands/render/text_layout.h"
#include "commands/version.h"

namespace pytstates {

Recording::Recording(const Target& target, HistoryLog::Limits limits, int frames)
    : plan_(planLifecycleProbes(target)),
      log_(std::make_shared<HistoryLog>(limits)),
      start_(std::chrono::steady_clock::now()),
      frames_(frames) {
    if (plan_.modules.empty()) throw NoCPythonYet("nothing to record: no CPython is loaded in the process yet");
    if (plan_.probes.empty()) {
        std::string why = "none of CPython's thread-state functions has a symbol";
        for (const auto& c : plan_.cannot) why += "; " + c;
        throw std::runtime_error("nothing to record: " + why);
    }
    log_->pid = target.pid();
    log_->executable = target.executable();
    log_->watched = plan_.modules;
    log_->cannot = plan_.cannot;
}

void Recording::hit(size_t probe, uint64_t tstate, int lwp, std::optional<uint32_t> key, std::vector<uint64_t> pcs) {
    if (probe >= plan_.probes.size()) return;
    const LifecycleProbe& p = plan_.probes[probe];
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    log_->record(p.event, p.function, p.atReturn, tstate, lwp, key, std::move(pcs), ms);
}

bool Recording::hitFrom(size_t probe, int lwp, const HitReaders& readers) {
    if (probe >= plan_.probes.size()) return false;
    auto got = readProbeHit(plan_.probes[probe], frames_ > 0 ? static_cast<size_t>(frames_) : 0, readers);
    if (!got) return false;
    hit(probe, got->tstate, lwp, got->key, std::move(got->pcs));
    return true;
}

std::string Recording::startText() const {
    std::map<std::string, size_t> perFunction;
    std::vector<std::string> order;
    for (const auto& p : plan_.probes)
        if (perFunction[p.function]++ == 0) order.push_back(p.function);
    std::string out = "recording thread-state events through " + plural(plan_.probes.size(), "breakpoint") + " in";
    for (const auto& m : plan_.modules) out += " " + m;
    out += ":";
    for (size_t i = 0; i < order.size(); ++i) {
        const LifecycleProbe* first = nullptr;
        for (const auto& p : plan_.probes)
            if (p.function == order[i]) {
                first = &p;
                break;
            }
        out += std::string(i ? "," : "") + " " + order[i] + " (" + lifecycleEventName(first->event) +
               (first->atReturn ? ", " + std::to_string(perFunction[order[i]]) + " return" + (perFunction[order[i]] == 1 ? "" : "s") : "") + ")";
    }
    out += "\n";
    for (const auto& c : plan_.cannot) out += "not recorded: " + c + "\n";
    return out;
}

bool parseRecordOptions(const std::vector<std::string>& args, HistoryLog::Limits* limits, int* frames, std::string* error) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string value = i + 1 < args.size() ? args[i + 1] : "";
        long n = -1;
        try {
            size_t used = 0;
            n = std::stol(value, &used);
            if (used != value.size()) n = -1;
        } catch (const std::exception&) {
        }
        if (a != "--per-tstate" && a != "--uses" && a != "--tstates" && a != "--frames") {
            *error = "unknown argument '" + a + "' (expected --per-tstate N, --uses N, --tstates N, --frames N)";
            return false;
        }
        if (n < 1 || n > 1000000) {
            *error = a;
            *error += " needs a number from 1 to 1000000, got '" + value + "'";
            return false;
        }
        ++i;
        if (a == "--per-tstate") limits->lifecyclePerTstate = static_cast<size_t>(n);
        if (a == "--uses") limits->usesPerTstate = static_cast<size_t>(n);
        if (a == "--tstates") limits->tstates = static_cast<size_t>(n);
        if (a == "--frames") *frames = static_cast<int>(n);
    }
    return true;
}

bool parseShowCount(const std::string& text, size_t* last, std::string* error) {
    try {
        size_t used = 0;
        long n = std::stol(text, &used);
        if (used == text.size() && n >= 1) {
            *last = static_cast<size_t>(n);
            return true;
        }
    } catch (const std::invalid_argument&) {
    } catch (const std::out_of_range&) {
    }
    *error = "show takes a number of events, got '" + text + "'";
    return false;
}

std::string armedText(bool running) {
    return running ? "recording armed: no CPython is loaded in the process yet; its breakpoints are set when it is\n"
                   : "recording armed for the next run: its breakpoints are set once the program has loaded CPython\n";
}

std::string recordStatusText(bool armed, size_t breakpoints, const HistoryLog* log) {
    if (armed) return "recording armed (waiting for the program to start and load CPython)\n";
    std::string counts = log ? plural(log->hits(), "breakpoint hit") + ", " + plural(log->recorded(), "event") + " recorded, " +
                                   std::to_string(log->events().size()) + " kept, " + std::to_string(log->dropped()) + " dropped"
                             : "";
    if (breakpoints) return "recording on: " + plural(breakpoints, "breakpoint") + (log ? ", " + counts : "") + "\n";
    return log ? "recording off: " + counts + " (the history stays: show, save)\n" : "recording off: nothing recorded\n";
}

std::string saveHistory(const HistoryLog& log, const std::string& path) {
    std::ofstream out(path);
    if (out) out << log.toJson();
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path);
    return "saved " + std::to_string(log.events().size()) + " events (" + std::to_string(log.hits()) + " breakpoint hits) to " + path + "\n";
}

std::string recordHelp() {
    return std::string(PYTSTATES_VERSION_STRING) +
           ". Record CPython's thread-state lifecycle while the program runs under the debugger.\n"
           "py-tstates-record on [--frames N] [--per-tstate N] [--uses N] [--tstates N]: break (without stopping) where\n"
           "CPython creates (PyThreadState_New, _PyThreadState_New, _PyThreadState_Prealloc: their return), clears and\n"
           "deletes (PyThreadState_Clear, PyThreadState_Delete, _PyThreadState_DeleteCurrent, tstate_delete_common) a\n"
           "thread state, where a TLS slot caches one (PyThread_tss_set: PyGILState's key and every pybind11 record's),\n"
           "and where one is put to use (PyEval_AcquireThread, PyEval_RestoreThread, PyThreadState_Swap). Each hit keeps\n"
           "the thread state, the LWP, the key and the top N native frames (default 4). Kept: the last --per-tstate\n"
           "lifecycle events (default 16) and --uses uses (default 8) of at most --tstates thread states (default 4096).\n"
           "Typed before run (or before the program loads libpython) it arms: the breakpoints are set once CPython is\n"
           "loaded. py-tstates-check then tells each stale, foreign or shared thread state's history: who created,\n"
           "cached, deleted and last used it.\n"
           "py-tstates-record off: remove the breakpoints, or disarm (the history stays). show [N]: the last N events\n"
           "(all by default). save FILE: the history as JSON, for `pytstates check --core CORE --history FILE`.\n"
           "py-tstates-record alone: whether recording is armed, on or off.";
}

}  // namespace pytstates
