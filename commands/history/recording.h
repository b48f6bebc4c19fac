// SPDX-License-Identifier: Apache-2.0
// One py-tstates-record session, shared by the gdb and lldb front ends: the probes planned on
// the process, and the log their hits feed. The front end sets a breakpoint per probe and, on
// each hit, reads the probe's registers and a few return addresses and calls hit().
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "commands/history/history_log.h"
#include "commands/history/probe_hit.h"
#include "symbols/cpython/lifecycle_probes.h"
#include "symbols/target.h"

namespace pytstates {

// No CPython is loaded in the process yet: a recording armed before libpython is loaded waits.
struct NoCPythonYet : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Recording {
public:
    // Throws NoCPythonYet when the process holds no CPython (yet), std::runtime_error (one line)
    // when the one it holds cannot be watched. frames: how many pcs a hit keeps (--frames).
    Recording(const Target& target, HistoryLog::Limits limits, int frames = 4);

    const ProbePlan& plan() const { return plan_; }
    std::shared_ptr<HistoryLog> log() const { return log_; }

    // One breakpoint hit: probe is an index into plan().probes; key is read by the front end
    // for cached events (keyRegister + keyOffset).
    void hit(size_t probe, uint64_t tstate, int lwp, std::optional<uint32_t> key, std::vector<uint64_t> pcs);
    // The same read through the debugger (probe_hit.h): what a hit keeps is decided here, for
    // every front end. False when the hit could not be read (not recorded).
    bool hitFrom(size_t probe, int lwp, const HitReaders& readers);
    int frames() const { return frames_; }

    // What `on` says: what is watched, through how many breakpoints, and what cannot be recorded.
    std::string startText() const;

private:
    ProbePlan plan_;
    std::shared_ptr<HistoryLog> log_;
    std::chrono::steady_clock::time_point start_;
    int frames_;
};

// What `on` says when it arms: typed before the program runs, or before it loads CPython.
std::string armedText(bool running);
// What a bare `py-tstates-record` says: armed (waiting), on (the front end's breakpoints set), or
// off; with the counts of the recording's log when there is one.
std::string recordStatusText(bool armed, size_t breakpoints, const HistoryLog* log);

// Parses `on` options (--per-tstate N, --uses N, --tstates N, --frames N); false and *error on a
// bad one. frames: how many frames the front end reads per hit.
bool parseRecordOptions(const std::vector<std::string>& args, HistoryLog::Limits* limits, int* frames, std::string* error);

// `show N`: the number of last events to show (text not empty); false and *error for anything
// but a whole number from 1.
bool parseShowCount(const std::string& text, size_t* last, std::string* error);

// `save FILE`: the log as JSON in FILE; the line that says so. Throws std::runtime_error
// ("cannot write FILE") when FILE cannot be written.
std::string saveHistory(const HistoryLog& log, const std::string& path);

// The help text of py-tstates-record.
std::string recordHelp();

}  // namespace pytstates
