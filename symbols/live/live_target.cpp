// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/live_target.h"
#include "symbols/live/monotonic_clock.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "symbols/glibc/thread_list.h"
#include "symbols/live/process_files.h"
#include "symbols/live/process_state.h"
#include "symbols/live/snapshot_copy.h"
#include "symbols/live/stop_snapshot.h"
#include "symbols/live/thread_registers.h"

namespace pytstates {

namespace {

// Threads to release if pytstates is told to stop mid-snapshot, with the signal each one was
// stopped with (0: none to deliver). Touched only by the signal handler and the (single) live
// target.
constexpr int kMaxSeized = 1 << 16;
int gSeized[kMaxSeized];
volatile sig_atomic_t gSignal[kMaxSeized];
volatile sig_atomic_t gWaited[kMaxSeized];
volatile sig_atomic_t gInterrupted[kMaxSeized];  // seized threads run on until interrupted
volatile sig_atomic_t gSeizedCount = 0;
struct sigaction gOldActions[3];
const int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

// What one look at a seized thread found (pollStop): the signal it stopped with (>= 0), or these.
constexpr int kGone = -1;     // it exited (and was reaped), or is no longer ours: nothing to detach
constexpr int kPending = -2;  // not stopped yet

// How long a stop waits for the threads it interrupted: a thread not stopped by then (blocked in
// the kernel, on a disk say) is left out of the snapshot; it is detached with the others.
constexpr std::chrono::seconds kStopWait{3};
// How long a release waits for a thread it interrupts (pytstates told to stop, in-process stop).
constexpr long kReleaseWaitNs = 1000L * 1000 * 1000;

// Reaps tid if it exited, never blocking: a traced thread's exit is its tracer's to reap, and until
// it is, the kernel holds back the exit of the thread group's leader, from us and from the target's
// parent. A tracer's wait reports its tracees' stops whatever the options, and reporting a stop
// clears the signal the thread was stopped with: the exit is looked at first (WNOWAIT), then
// reaped. True when reaped, or not ours. Async-signal-safe.
bool reapIfExited(int tid) {
    siginfo_t info{};
    int r;
    do {
        r = waitid(P_PID, static_cast<id_t>(tid), &info, WEXITED | __WALL | WNOHANG | WNOWAIT);
    } while (r < 0 && errno == EINTR);
    if (r != 0) return true;  // ECHILD: not ours (any more)
    if (info.si_pid != tid || (info.si_code != CLD_EXITED && info.si_code != CLD_KILLED && info.si_code != CLD_DUMPED))
        return false;
    do {  // a zombie stays one: this reports that exit
        r = waitid(P_PID, static_cast<id_t>(tid), &info, WEXITED | __WALL | WNOHANG);
    } while (r < 0 && errno == EINTR);
    return true;
}

// One look, never blocking, at a thread PTRACE_INTERRUPT was asked to stop: the signal of a
// signal-delivery-stop (the thread dequeued a signal just before: detaching with 0 would throw it
// away), 0 for an interrupt or group-stop, kGone when it exited (reaped here), kPending. Every wait
// of the stop is such a look: a blocking wait for one thread may never end (a leader whose exit
// waits for its other threads, which only their tracer can reap). peek, for a tracer process that
// ends without detaching: the stop is left to be reported again (WNOWAIT), because reporting it
// clears the signal a thread was stopped with, and a thread stopped on a signal gets it back when
// its tracer exits only if it was not cleared. Async-signal-safe.
int pollStop(int tid, bool peek) {
    siginfo_t info{};
    int r;
    do {
        r = waitid(P_PID, static_cast<id_t>(tid), &info, WSTOPPED | WEXITED | __WALL | WNOHANG | (peek ? WNOWAIT : 0));
    } while (r < 0 && errno == EINTR);
    if (r != 0) return kGone;  // ECHILD: not ours any more (another thread's execve took its id away)
    if (info.si_pid != tid) return kPending;  // si_pid 0: nothing to report yet
    if (info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
        if (peek) reapIfExited(tid);
        return kGone;
    }
    if (info.si_code != CLD_TRAPPED && info.si_code != CLD_STOPPED) return 0;
    // si_status: the stop's code, PTRACE_EVENT_STOP << 8 for an interrupt or group-stop (which the
    // kernel keeps after the detach); no event: a signal-delivery-stop.
    return (info.si_status >> 8) == 0 ? (info.si_status & 0x7f) : 0;
}

long nsSince(const timespec& start) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - start.tv_sec) * 1000L * 1000 * 1000 + (now.tv_nsec - start.tv_nsec);
}

// Waits for a stop of this process's (not peeked), kReleaseWaitNs at most from `start`; kPending
// when it did not come. Async-signal-safe.
int waitStop(int tid, const timespec& start) {
    long pauseNs = 10'000;
    for (;;) {
        int sig = pollStop(tid, false);
        if (sig != kPending || nsSince(start) >= kReleaseWaitNs) return sig;
        timespec pause{0, pauseNs};
        nanosleep(&pause, nullptr);
        pauseNs = std::min(pauseNs * 2, 1000L * 1000);
    }
}

// Detaches one thread, handing back the signal it was stopped with so that the target sees
// every signal it was sent. A thread that does not stop in time is left seized: it is detached
// when pytstates exits. Async-signal-safe.
void release(int i, const timespec& start) {
    if (!gInterrupted[i]) {  // seized, still running: only a stopped thread can be detached
        gInterrupted[i] = 1;
        if (ptrace(PTRACE_INTERRUPT, gSeized[i], nullptr, nullptr) != 0) {
            gSignal[i] = kGone;
            gWaited[i] = 1;
        }
    }
    if (!gWaited[i]) {
        int sig = waitStop(gSeized[i], start);
        if (sig == kPending) return;
        gSignal[i] = sig;
        gWaited[i] = 1;
    }
    if (gSignal[i] < 0) return;  // the thread is gone
    if (ptrace(PTRACE_DETACH, gSeized[i], nullptr, reinterpret_cast<void*>(static_cast<long>(gSignal[i]))) != 0)
        reapIfExited(gSeized[i]);  // killed while stopped: a zombie only its tracer can reap
}

void releaseAll() {
    timespec start{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < gSeizedCount; ++i) release(i, start);
    gSeizedCount = 0;
}

void onSignal(int sig) {
    if (!TracerProcess::endFromSignalHandler()) releaseAll();  // no tracer process: pytstates holds the stop
    const char msg[] = "pytstates: interrupted; the target was detached\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    (void)sig;
    _exit(2);
}

std::vector<int> listTasks(int pid) {
    std::vector<int> tids;
    std::string dir = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = opendir(dir.c_str());
    if (!d) return tids;
    while (dirent* e = readdir(d))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
    closedir(d);
    return tids;
}

std::string tracerOf(int pid) {
    std::istringstream status(readProcText("/proc/" + std::to_string(pid) + "/status"));
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("TracerPid:", 0) == 0) {
            int tracer = std::atoi(line.c_str() + 10);
            if (tracer) {
                std::string comm = readProcText("/proc/" + std::to_string(tracer) + "/comm");
                if (!comm.empty() && comm.back() == '\n') comm.pop_back();
                return std::to_string(tracer) + (comm.empty() ? "" : " (" + comm + ")");
            }
        }
    return {};
}

std::string permissionWords(int pid) {
    std::string why = "permission denied attaching to process " + std::to_string(pid);
    std::string tracer = tracerOf(pid);
    if (!tracer.empty()) return why + ": it is already traced by process " + tracer + " (detach gdb or the other tracer first)";
    std::string scope = readProcText("/proc/sys/kernel/yama/ptrace_scope");
    if (!scope.empty() && scope[0] == '3') return why + ": kernel.yama.ptrace_scope is 3 (no process may attach)";
    // Root told to run as root would be no help: its capability or a security module refused.
    if (geteuid() == 0) return why + " (pytstates runs as root: without CAP_SYS_PTRACE here, or refused by a security module?)";
    if (!scope.empty() && scope[0] != '0') why += ": kernel.yama.ptrace_scope is " + scope.substr(0, 1) + " (run as root or with CAP_SYS_PTRACE)";
    else why += " (another user's process? run as root or with CAP_SYS_PTRACE)";
    return why;
}

}  // namespace

LiveTarget::LiveTarget(const LiveOptions& options)
    : pid_(options.pid), stopWanted_(options.stop), cache_([this](uint64_t addr, void* buf, size_t len) {
          return readUncached(addr, buf, len);
      }) {
    if (pid_ <= 0 || kill(pid_, 0) != 0) {
        if (errno == EPERM) throw std::runtime_error(permissionWords(pid_));
        throw std::runtime_error("no such process: " + std::to_string(pid_));
    }
    if (processLife(pid_, ProcessIdentity{}) == ProcessLife::Exiting)
        throw std::runtime_error("process " + std::to_string(pid_) + " has exited (its parent has not reaped it yet)");
    identity_ = processIdentity(pid_);
    // A process that ends while it is read fails the reading somewhere: say what happened to it.
    try {
        openProcess(options);
    } catch (const std::exception&) {
        if (memFd_ >= 0) ::close(memFd_);  // no destructor for a constructor that throws
        if (auto why = endedDuringAttach(kExitGrace)) throw std::runtime_error(*why);
        throw;
    }
}

void LiveTarget::openProcess(const LiveOptions& options) {
    std::string mem = "/proc/" + std::to_string(pid_) + "/mem";
    memFd_ = ::open(mem.c_str(), O_RDONLY | O_CLOEXEC);
    // Modules now, while the target runs: the stop covers only what must be consistent.
    buildModules(options);
    if (!stopWanted_) {
        threadsFromGlibc();
        namespaceLwps();
        warnings_.push_back("read without stopping the process (--no-stop): the snapshot may be inconsistent");
        if (threads_.empty()) throw std::runtime_error("process " + std::to_string(pid_) + ": no thread found in glibc's thread lists");
    }
}

std::optional<std::string> LiveTarget::endedDuringAttach(std::chrono::milliseconds grace) const {
    auto until = std::chrono::steady_clock::now() + grace;
    for (;;) {
        ProcessLife life = processLife(pid_, identity_);
        if (life != ProcessLife::Running) return pytstates::endedDuringAttach(pid_, life);
        if (std::chrono::steady_clock::now() >= until) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// A process in its own PID namespace: each thread's id there.
void LiveTarget::namespaceLwps() {
    if (namespacePids_.size() < 2) return;
    for (auto& t : threads_) t.namespaceLwp = namespaceTid(pid_, t.lwp);
}

std::optional<double> LiveTarget::monotonicNow() const { return stoppedMonotonic_ ? stoppedMonotonic_ : processMonotonicNow(pid_); }

void LiveTarget::stop() {
    if (!stopWanted_ || !threads_.empty()) return;
    cache_.setCapacity(SIZE_MAX);  // every page read while stopped belongs to the snapshot
    for (int i = 0; i < 3; ++i) {
        struct sigaction sa {};
        sa.sa_handler = onSignal;
        sigemptyset(&sa.sa_mask);
        sigaction(kSignals[i], &sa, &gOldActions[i]);
    }
    handlersSet_ = true;
    // In a tracer process if one can be made and attach (under Yama's ptrace_scope 1 only an
    // ancestor of the target may, which pytstates can be and its child cannot): here otherwise.
    size_t warningsBefore = warnings_.size();
    std::string error;
    prepareStop();
    inTracer_ = true;
    // Test hook: the stop made by pytstates itself, as where the tracer process may not attach.
    bool inTracer = !std::getenv("PYTSTATES_TEST_NO_TRACER") && tracer_.run([this] { stopAll(); }, &error);
    inTracer_ = false;
    if (!inTracer) {
        tracer_.end();
        if (tracer_.timedOut()) {  // here it would hang as well
            copy_.abandon();
            seized_.clear();
            gSeizedCount = 0;
            threads_.clear();
            resume();
            throw std::runtime_error(error);
        }
        copy_.abandon();  // it copied threads that run again
        seized_.clear();
        gSeizedCount = 0;
        threads_.clear();
        warnings_.resize(warningsBefore);
        prepareStop();
        stopAll();
    }
    stoppedAllMs_ = msSinceStop();
    stoppedMonotonic_ = processMonotonicNow(pid_);
    startSnapshot();
    namespaceLwps();
    // Test hook: hold the stop so a test can kill pytstates mid-snapshot.
    if (const char* hold = std::getenv("PYTSTATES_TEST_HOLD_MS")) usleep(static_cast<useconds_t>(std::atoi(hold)) * 1000);
    if (threads_.empty()) {
        resume();
        if (auto why = endedDuringAttach(kExitGrace)) throw std::runtime_error(*why);
        throw std::runtime_error("process " + std::to_string(pid_) + " has no thread that could be stopped");
    }
}

double LiveTarget::msSinceStop() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stoppedAt_).count();
}

// What is read or allocated for the stop before it starts: nothing is stopped yet.
void LiveTarget::prepareStop() {
    cache_.clear();  // what was read while running is not part of the snapshot
    firstTasks_ = listTasks(pid_);
    // Memory for what is copied while stopped, allocated and touched now: while stopped, page
    // faults in fresh memory took about as long as the copies themselves. The snapshot holds
    // about 2-3 pages a thread, the frames prefetched one more; at most 64 MiB ahead (pages past
    // the reserve are allocated as they come).
    size_t threads = firstTasks_.size();
    cache_.reserve(std::min<size_t>(threads * 4 + 256, 16384));
    mapsBeforeStop_ = readableMappings(readProcText("/proc/" + std::to_string(pid_) + "/maps"));
    // The copier, which copies each thread's memory as soon as the thread is stopped.
    copy_.start(pid_, mapsBeforeStop_, threads + 64, cache_.takeStorage(std::min<size_t>(threads * 3 + 64, 12288)));
}

void LiveTarget::startSnapshot() {
    // The mappings as read before the stop (~0.7 ms at 1,000 threads); read again if a thread's
    // stack is not among them (a thread made meanwhile).
    size_t outside = 0;
    auto ranges = snapshotRanges(threads_, mapsBeforeStop_, hostArch(), &outside);
    if (outside) ranges = snapshotRanges(threads_, readableMappings(readProcText("/proc/" + std::to_string(pid_) + "/maps")), hostArch());
    mapsBeforeStop_.clear();
    copy_.complete(std::move(ranges), stopRounds_ == 1);
}

void LiveTarget::takeThreadMemory() const {
    snapshotNeededMs_ = msSinceStop();
    PageCache::PinnedPages pages = copy_.threadMemory();
    snapshotPages_ += pages.size();
    cache_.pin(std::move(pages));
}

void LiveTarget::finishSnapshot() const {
    if (!copy_.pending()) return;
    if (!snapshotNeededMs_) snapshotNeededMs_ = msSinceStop();
    SnapshotCopy::Result copied = copy_.finish();
    snapshotDoneMs_ = std::chrono::duration<double, std::milli>(copied.doneAt - stoppedAt_).count();
    snapshotCalls_ = copied.calls;
    snapshotPages_ += copied.pages.size();
    cache_.pin(std::move(copied.pages));
    cache_.returnStorage(std::move(copied.unused));
}

std::optional<std::vector<Target::PartRead>> LiveTarget::readAfterResume() const {
    if (!resumed_) return std::nullopt;
    return afterResume_;
}

LiveTarget::~LiveTarget() {
    resume();
    if (memFd_ >= 0) ::close(memFd_);
}

void LiveTarget::buildModules(const LiveOptions& options) {
    std::string base = "/proc/" + std::to_string(pid_);
    std::string auxv = readProcText(base + "/auxv");
    if (auxv.empty()) {
        int err = errno;
        if (auto why = endedDuringAttach()) throw std::runtime_error(*why);  // a zombie's reads empty
        errno = err;
        if (errno == EACCES || errno == EPERM) throw std::runtime_error(permissionWords(pid_));
        throw std::runtime_error("cannot read " + base + "/auxv: " + std::strerror(errno));
    }
    ModuleDiscoveryInput in;
    for (size_t i = 0; i + 16 <= auxv.size(); i += 16) {
        uint64_t k, v;
        std::memcpy(&k, auxv.data() + i, 8);
        std::memcpy(&v, auxv.data() + i + 8, 8);
        if (k == AT_PHDR) in.atPhdr = v;
        if (k == AT_PHNUM) in.atPhnum = v;
        if (k == AT_ENTRY) in.atEntry = v;
        if (k == AT_SYSINFO_EHDR && v) vdso_ = v;
    }
    ProcessFiles files = readProcessFiles(pid_);
    root_ = files.root;
    namespacePids_ = files.namespacePids;
    in.mappings = std::move(files.mappings);
    in.executable = files.executable;
    in.memory = this;
    in.pristine = this;
    in.search = options.search;
    in.search.processDir = base;
    ModuleDiscovery found = discoverModules(in);
    executable_ = found.executable;
    modules_ = std::move(found.modules);
    warnings_ = std::move(found.warnings);
}

void LiveTarget::stopAll() {
    std::set<int> done;
    // The first list was read before the stop (prepareStop).
    std::vector<int> tasks = firstTasks_;
    // The stop begins with the first interrupt: a thread seized runs on, unless a signal comes
    // to it meanwhile, which stops it from its seizing (then the stop is timed from there).
    auto seizing = std::chrono::steady_clock::now();
    bool clockStarted = false;
    // Threads may start or end while we stop the others: list again until nothing is new.
    for (int round = 0; round < 50; ++round) {
        // Seize every new thread, interrupt them all, then collect the stops: the threads stop in parallel.
        std::vector<int> interrupted;
        if (round > 0) tasks = listTasks(pid_);
        for (int tid : tasks) {
            if (!done.insert(tid).second) continue;
            if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
                int err = errno;
                // Ended meanwhile; the kernel refuses to seize a thread that has exited with EPERM.
                if (err == ESRCH || (err == EPERM && threadEnding(pid_, tid))) continue;
                if (seized_.empty()) {  // nothing to resume; the handlers are restored by resume()
                    if (ProcessLife life = processLife(pid_, identity_); life != ProcessLife::Running)
                        throw std::runtime_error(pytstates::endedDuringAttach(pid_, life));
                    if (err == EPERM) throw std::runtime_error(permissionWords(pid_));
                    throw std::runtime_error("cannot attach to process " + std::to_string(pid_) + ": " + std::strerror(err));
                }
                warnings_.push_back("thread " + std::to_string(tid) + " could not be stopped: " + std::strerror(err));
                continue;
            }
            if (gSeizedCount >= kMaxSeized) {  // cannot be released by the handler: let it run
                ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
                warnings_.push_back("thread " + std::to_string(tid) + " was not stopped: too many threads");
                continue;
            }
            int slot = gSeizedCount;
            gSeized[slot] = tid;
            gSignal[slot] = 0;
            gWaited[slot] = 0;
            gInterrupted[slot] = 0;
            gSeizedCount = slot + 1;
            seized_.push_back(tid);
            interrupted.push_back(slot);
        }
        if (interrupted.empty()) break;
        stopRounds_ = round + 1;
        if (!clockStarted) stoppedAt_ = std::chrono::steady_clock::now();
        clockStarted = true;
        // Seized threads run on; the interrupts follow one another as fast as they can be made,
        // then the stops are collected: the threads stop in parallel.
        for (int slot : interrupted) {
            if (ptrace(PTRACE_INTERRUPT, gSeized[slot], nullptr, nullptr) != 0) {
                gSignal[slot] = kGone;  // ended meanwhile: there is no stop to wait for
                gWaited[slot] = 1;
            }
            gInterrupted[slot] = 1;
        }
        collectStops(interrupted, round == 0 ? &seizing : nullptr);
        // Every thread seized is stopped: when the kernel counts no more threads than that, none
        // was made meanwhile and the list need not be read again (~0.8 ms at 1,000 threads).
        bool allStopped = std::all_of(gSignal, gSignal + gSeizedCount, [](sig_atomic_t sig) { return sig >= 0; });
        if (allStopped && static_cast<int>(processThreadCount(pid_)) == gSeizedCount) break;
    }
    // TLS variant I (aarch64): struct pthread lies below the thread pointer, by glibc's own size.
    if (hostArch().tlsVariantI)
        if (uint64_t size = glibcSizeofPthread(*this))
            for (auto& t : threads_) t.pthread = hostArch().pthreadFromThreadPointer(t.threadPointer, size);
    std::sort(threads_.begin(), threads_.end(), [](const OsThread& a, const OsThread& b) {
        return a.lwp < b.lwp;
    });
    // The thread group leader first, as in a core.
    std::stable_partition(threads_.begin(), threads_.end(), [this](const OsThread& t) { return t.lwp == pid_; });
}

// Collects the stops of the threads just interrupted (their slots), each as it comes: its
// registers are read and published to the copier. Never blocks for long: looks at each thread in
// turn, sleeps a little (10 us, doubling to 1 ms) when none has stopped since, reaps the seized
// threads that exited (a process killed mid-stop: its leader's exit waits for them), and gives up
// on a thread not stopped kStopWait after the stop began. seizing: the first round's, whose
// signal-delivery-stops time the stop from the seizing.
void LiveTarget::collectStops(std::vector<int> pending, const std::chrono::steady_clock::time_point* seizing) {
    const auto deadline = stoppedAt_ + kStopWait;
    auto pause = std::chrono::microseconds(10);
    auto lastSweep = std::chrono::steady_clock::now();
    while (!pending.empty()) {
        size_t before = pending.size();
        pending.erase(std::remove_if(pending.begin(), pending.end(), [&](int slot) {
                          if (gSignal[slot] == kGone && gWaited[slot]) return true;  // its interrupt failed
                          int tid = gSeized[slot];
                          int sig = pollStop(tid, inTracer_);
                          if (sig == kPending) return false;
                          gSignal[slot] = sig;
                          gWaited[slot] = 1;
                          OsThread t;
                          if (sig < 0 || !readThreadRegisters(tid, &t)) return true;
                          t.signal = sig;
                          if (sig > 0 && seizing) stoppedAt_ = std::min(stoppedAt_, *seizing);  // a signal-delivery stop
                          threads_.push_back(t);
                          copy_.stopped().publish(t.sp, t.pthread);
                          return true;
                      }),
                      pending.end());
        if (pending.empty()) break;
        if (pending.size() < before) {
            pause = std::chrono::microseconds(10);
            continue;
        }
        auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            for (int slot : pending) {
                gSignal[slot] = kPending;  // gWaited stays 0: a release waits for it once more
                warnings_.push_back("thread " + std::to_string(gSeized[slot]) + " did not stop within " +
                                    std::to_string(kStopWait.count()) + " s: it is not in the snapshot");
            }
            break;
        }
        // Threads stopped (or whose interrupt failed) and killed since are zombies that hold back
        // their leader's exit until reaped: every few ms (a call per thread), not at each look.
        if (now - lastSweep >= std::chrono::milliseconds(2)) {
            lastSweep = now;
            for (int slot = 0; slot < gSeizedCount; ++slot)
                if (gWaited[slot] && reapIfExited(gSeized[slot])) gSignal[slot] = kGone;
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
}

void LiveTarget::threadsFromGlibc() {
    threads_ = threadsFromGlibcLists(*this);
    std::set<int> alive;
    for (int tid : listTasks(pid_)) alive.insert(tid);
    threads_.erase(std::remove_if(threads_.begin(), threads_.end(), [&](const OsThread& t) { return !alive.count(t.lwp); }),
                   threads_.end());
}

double LiveTarget::resume() {
    finishSnapshot();  // the copy must end before the threads run
    if (!seized_.empty()) {
        resumeCalledMs_ = msSinceStop();
        if (tracer_.pid()) {
            tracer_.end();  // the kernel detaches its tracees
            gSeizedCount = 0;
        } else {
            releaseAll();
        }
        stoppedMs_ = msSinceStop();
        seized_.clear();
        cache_.pinAll();
        cache_.setCapacity(PageCache::kDefaultCapacity);
        cache_.reserve(0);
        stoppedFetches_ = cache_.fetches();
        resumed_ = true;
    }
    tracer_.end();
    if (handlersSet_) {
        for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &gOldActions[i], nullptr);
        handlersSet_ = false;
    }
    return stoppedMs_;
}

std::optional<std::string> LiveTarget::threadComm(int lwp) const { return readThreadComm(pid_, lwp); }

size_t LiveTarget::read(uint64_t addr, void* buf, size_t len) const {
    if (len == 0) return 0;
    countRead(len);
    if (copy_.reaches(addr, len)) takeThreadMemory();
    // Cache pages while the snapshot holds (stopped, or a --no-stop read) and after it, when the
    // snapshot's pages answer first; not before the stop.
    if (!seized_.empty() || !stopWanted_ || resumed_) return cache_.read(addr, buf, len);
    return readUncached(addr, buf, len);
}

// While stopped only: the pages not held yet, in as few system calls as the kernel allows. A page
// that cannot be read is left to the read that wants it (and fails the same way).
void LiveTarget::prefetch(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) const {
    if (seized_.empty() || resumed_) return;
    for (const auto& [start, end] : ranges)
        if (copy_.reaches(start, end - start)) takeThreadMemory();
    constexpr uint64_t kPage = 4096;
    std::vector<std::pair<uint64_t, uint64_t>> wanted;
    for (const auto& [start, end] : ranges)
        for (uint64_t page = start & ~(kPage - 1); page < end; page += kPage)
            if (!cache_.cached(page)) wanted.emplace_back(page, page + kPage);
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    if (wanted.empty()) return;
    std::vector<std::vector<unsigned char>> storage = cache_.takeStorage(wanted.size());
    std::vector<CopiedPage> pages;
    prefetchCalls_ += readPagesInto(pid_, wanted, storage, pages);
    for (auto& page : pages) cache_.adopt(page.base, std::move(page.bytes), 4096);
    cache_.returnStorage(std::move(storage));
}

bool LiveTarget::readLate(uint64_t addr, size_t len) const {
    for (uint64_t page = addr & ~uint64_t{4095}; page < addr + len; page += 4096)
        if (latePages_.count(page)) return true;
    return false;
}

size_t LiveTarget::readUncached(uint64_t addr, void* buf, size_t len) const {
    if (resumed_) {  // not in the snapshot: from the running process
        std::string part = readingPart();
        auto it = std::find_if(afterResume_.begin(), afterResume_.end(), [&](const PartRead& p) { return p.part == part; });
        if (it == afterResume_.end()) it = afterResume_.insert(afterResume_.end(), PartRead{part, 0, 0});
        ++it->reads;
        it->bytes += len;
        for (uint64_t page = addr & ~uint64_t{4095}; page < addr + len; page += 4096) latePages_.insert(page);
    }
    iovec local{buf, len};
    iovec remote{reinterpret_cast<void*>(addr), len};
    ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n > 0) return static_cast<size_t>(n);
    if (memFd_ >= 0) {
        n = pread(memFd_, buf, len, static_cast<off_t>(addr));
        if (n > 0) return static_cast<size_t>(n);
    }
    return 0;
}

}  // namespace pytstates
