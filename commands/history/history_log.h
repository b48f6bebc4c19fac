// SPDX-License-Identifier: Apache-2.0
// The thread-state history a debugger records (py-tstates-record): one event per breakpoint hit
// on CPython's lifecycle functions (symbols/cpython/lifecycle_probes), kept per thread state and
// bounded, named (function, module) when shown or saved, saved to and read from JSON.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/lifecycle_probes.h"
#include "symbols/target.h"

namespace pytstates {

struct HistoryFrame {
    uint64_t pc = 0;
    std::string function;  // empty when unknown
    std::string module;    // the module's path; empty when in none
};

struct HistoryEvent {
    uint64_t seq = 0;                 // order of the hit among all hits recorded
    LifecycleEvent event = LifecycleEvent::Used;
    std::string function;             // the CPython function the breakpoint is in
    uint64_t tstate = 0;
    int lwp = 0;
    std::optional<uint32_t> key;      // cached: the pthread key
    double ms = 0;                    // since recording began
    std::vector<uint64_t> pcs;        // the hit's pc, then return addresses, innermost first
    std::vector<HistoryFrame> frames; // named from pcs (inlined calls as frames of their own)
};

class HistoryLog {
public:
    struct Limits {
        size_t lifecyclePerTstate = 16;  // created, cached, cleared, deleted: the last N
        size_t usesPerTstate = 8;        // used: the last N
        size_t tstates = 4096;           // thread states kept; the least recently touched goes first
    };
    HistoryLog() = default;
    explicit HistoryLog(Limits limits) : limits_(limits) {}

    // One breakpoint hit. Thread states of 0 are counted and not kept.
    void record(LifecycleEvent event, const std::string& function, bool atReturn, uint64_t tstate, int lwp,
                std::optional<uint32_t> key, std::vector<uint64_t> pcs, double ms);

    // Every event kept, in the order they happened.
    std::vector<HistoryEvent> events() const;
    // The events of one thread state's last life: from its last creation on (all when none).
    std::vector<HistoryEvent> lastLife(uint64_t tstate) const;
    bool empty() const;

    // Names the frames of every event not named yet, through the target's modules.
    void nameFrames(const Target& target, bool useDwarf = true);
    // Names only what check tells: the events of the last life of each of `tstates` (lastLife),
    // those the history's words use first (its lifecycle events, then its uses from the last), and
    // at most `maxPcs` program counters not named yet in all: each costs a DWARF lookup, and a
    // saved history may hold any number. The pcs over that keep a frame without a name. Returns
    // how many pcs were left unnamed.
    size_t nameLastLives(const Target& target, const std::vector<uint64_t>& tstates, bool useDwarf, size_t maxPcs);

    uint64_t hits() const { return hits_; }        // breakpoint hits seen
    uint64_t recorded() const { return recorded_; }  // events they made (hits of one call merged), kept or not
    uint64_t dropped() const { return dropped_; }  // events no longer kept (limits)
    const Limits& limits() const { return limits_; }

    // Who and what was recorded, for a saved history.
    int pid = 0;
    std::string executable;
    std::vector<std::string> watched;  // ProbePlan::modules
    std::vector<std::string> cannot;   // ProbePlan::cannot

    std::string toJson() const;
    // Throws std::runtime_error (one line) on a file that is not a saved history.
    static std::shared_ptr<HistoryLog> fromJson(const std::string& text);
    // The same from a file (`--history FILE`); the one line names the file. Only a regular file
    // of at most kMaxFileSize bytes is read.
    static std::shared_ptr<HistoryLog> fromFile(const std::string& path);
    // Twice what py-tstates-record keeps at its default limits (4096 thread states, 24 events each,
    // about 1.2 KiB an event with its frames).
    static constexpr uint64_t kMaxFileSize = 256ull << 20;

private:
    struct Track {
        std::deque<HistoryEvent> lifecycle;
        std::deque<HistoryEvent> uses;
        uint64_t lastSeq = 0;
    };
    void keep(Track& track, HistoryEvent event);
    void evictIfFull();

    mutable std::mutex mutex_;
    Limits limits_;
    std::map<uint64_t, Track> tracks_;
    uint64_t nextSeq_ = 1;
    uint64_t hits_ = 0;
    uint64_t recorded_ = 0;
    uint64_t dropped_ = 0;
};

}  // namespace pytstates
