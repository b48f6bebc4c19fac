// SPDX-License-Identifier: Apache-2.0
// Target over a running process, read-only. With stop=true every thread is stopped with
// PTRACE_SEIZE + PTRACE_INTERRUPT for a consistent snapshot, by a tracer process
// (symbols/live/tracer_process) or, where it may not attach, by pytstates itself, and resumed
// (detached) when the target is destroyed, on any error, and on SIGINT/SIGTERM/SIGHUP of
// pytstates; a tracer that dies (even by SIGKILL) leaves seized threads running. No wait of the
// stop blocks for long: a process that exits, is killed or execs meanwhile ends the attach with one
// line (endedDuringAttach), and the seized threads that exited are reaped, so that its parent can
// reap it. With stop=false nothing is stopped: the threads and their struct pthread come from
// glibc's own thread lists in memory.
// Memory through process_vm_readv, falling back to /proc/PID/mem. Never writes to the target.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "symbols/modules/module_discovery.h"
#include "symbols/live/process_state.h"
#include "symbols/live/snapshot_copy.h"
#include "symbols/live/stop_snapshot.h"
#include "symbols/live/tracer_process.h"
#include "symbols/page_cache.h"
#include "symbols/target.h"

namespace pytstates {

struct LiveOptions {
    int pid = 0;
    bool stop = true;
    FileSearch search;
};

class LiveTarget : public Target {
public:
    // Throws std::runtime_error (one line) when the process cannot be read.
    explicit LiveTarget(const LiveOptions& options);
    ~LiveTarget() override;
    LiveTarget(const LiveTarget&) = delete;
    LiveTarget& operator=(const LiveTarget&) = delete;

    size_t read(uint64_t addr, void* buf, size_t len) const override;
    void prefetch(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) const override;
    TargetKind kind() const override { return TargetKind::Live; }
    int pid() const override { return pid_; }
    std::string executable() const override { return executable_; }
    const std::vector<OsThread>& threads() const override { return threads_; }
    const std::vector<LoadedModule>& modules() const override { return modules_; }
    const std::vector<std::string>& warnings() const override { return warnings_; }
    std::vector<int> namespacePids() const override { return namespacePids_; }
    std::string rootDirectory() const override { return root_; }
    std::optional<uint64_t> vdsoAddress() const override { return vdso_; }
    std::optional<std::string> threadComm(int lwp) const override;
    // When every thread was stopped (stop()); now when the process was not stopped.
    std::optional<double> monotonicNow() const override;

    // Stops every thread (when options.stop), reads their registers and starts copying what the
    // analysis needs consistent and can name now (symbols/live/stop_snapshot), on a thread of its
    // own: a read that reaches those pages, and resume(), wait for the copy. Throws
    // std::runtime_error.
    void stop();
    // Resumes every stopped thread; returns how long the target was stopped, in ms. Every page
    // read while stopped is kept and answers later reads: the snapshot of one moment; pages
    // read after are read from the running process, counted per part (readAfterResume).
    double resume();
    bool stopped() const { return !seized_.empty(); }
    // One line when the process has exited, is exiting or runs another program (execve) since it
    // was opened: what happened to it, rather than the error it caused meanwhile; none when it runs.
    // grace: how long to watch a process that still runs, after a failure (a Python process
    // that exits by itself fails the reading while it finalizes, a moment before it exits).
    std::optional<std::string> endedDuringAttach(std::chrono::milliseconds grace = std::chrono::milliseconds(0)) const;
    static constexpr std::chrono::milliseconds kExitGrace{500};
    std::optional<std::vector<PartRead>> readAfterResume() const override;
    bool readLate(uint64_t addr, size_t len) const override;
    // The snapshot's batched reads: pages copied and the system calls they took.
    size_t snapshotPages() const { return snapshotPages_; }
    size_t snapshotCalls() const { return snapshotCalls_; }
    // When the analysis first needed the threads' memory from the snapshot (or the resume came).
    double snapshotNeededMs() const { return snapshotNeededMs_; }
    // Pages read one at a time while stopped (not in the snapshot or a prefetch), and the
    // system calls prefetch() took.
    size_t stoppedFetches() const { return stoppedFetches_; }
    size_t prefetchCalls() const { return prefetchCalls_; }
    // Where the stop's time went (ms from the first interrupt): all threads stopped and their
    // registers read, the snapshot copied (beside the analysis).
    double stoppedAllMs() const { return stoppedAllMs_; }
    double snapshotDoneMs() const { return snapshotDoneMs_; }
    // When resume() was asked for (the analysis done while stopped); stoppedMs: all detached.
    double resumeCalledMs() const { return resumeCalledMs_; }
    double stoppedMs() const { return stoppedMs_; }

private:
    size_t readUncached(uint64_t addr, void* buf, size_t len) const;
    void stopAll();
    void collectStops(std::vector<int> slots, const std::chrono::steady_clock::time_point* seizing);
    void openProcess(const LiveOptions& options);
    void threadsFromGlibc();
    void namespaceLwps();
    void buildModules(const LiveOptions& options);
    void prepareStop();
    void startSnapshot();
    void takeThreadMemory() const;  // waits for the copy of the threads' own memory, puts it in the cache
    void finishSnapshot() const;    // waits for the whole copy and puts the rest in the cache
    double msSinceStop() const;

    int pid_;
    bool stopWanted_;
    int memFd_ = -1;
    std::string executable_;
    ProcessIdentity identity_;  // the program run that was opened
    std::vector<int> seized_;
    TracerProcess tracer_;  // holds the stop when it could be made; its exit resumes every thread
    std::vector<OsThread> threads_;
    std::vector<LoadedModule> modules_;
    std::vector<std::string> warnings_;
    std::vector<int> namespacePids_;
    std::optional<uint64_t> vdso_;  // AT_SYSINFO_EHDR
    std::string root_ = "/";  // NSpid: this pid in each PID namespace, outermost first
    std::chrono::steady_clock::time_point stoppedAt_;
    double stoppedMs_ = 0;
    mutable PageCache cache_;  // (mutable: prefetch() fills it) while stopped and after (its pages pinned), or for one --no-stop read
    bool inTracer_ = false;  // stopAll() runs in the tracer process
    bool handlersSet_ = false;  // pytstates' SIGINT/SIGTERM/SIGHUP handlers, from stop() to resume()
    bool resumed_ = false;  // stopped and resumed: the cache holds the snapshot
    mutable SnapshotCopy copy_;
    std::vector<int> firstTasks_;  // the threads listed before the stop
    int stopRounds_ = 0;           // listings of the threads that found some to stop
    mutable size_t snapshotPages_ = 0, snapshotCalls_ = 0;
    size_t stoppedFetches_ = 0;
    mutable size_t prefetchCalls_ = 0;
    double stoppedAllMs_ = 0, resumeCalledMs_ = 0;
    std::optional<double> stoppedMonotonic_;  // the process's CLOCK_MONOTONIC once every thread stopped
    mutable double snapshotDoneMs_ = 0, snapshotNeededMs_ = 0;
    std::vector<MappedRange> mapsBeforeStop_;  // /proc/PID/maps read just before the stop
    mutable std::vector<PartRead> afterResume_;
    mutable std::unordered_set<uint64_t> latePages_;  // pages fetched after the resume (then cached)
};

}  // namespace pytstates
