// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/live_target.h"

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

#include "symbols/glibc/thread_list.h"
#include "symbols/live/process_files.h"
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

// Waits for the stop PTRACE_INTERRUPT asked for. Returns the signal of a signal-delivery-stop
// (the thread dequeued a signal just before: detaching with 0 would throw it away), 0 for an
// interrupt or group-stop, -1 when the thread is gone. Async-signal-safe.
int collectStop(int tid) {
    int status = 0;
    pid_t got;
    do {
        got = waitpid(tid, &status, __WALL);
    } while (got < 0 && errno == EINTR);
    if (got != tid || WIFEXITED(status) || WIFSIGNALED(status)) return -1;
    if (!WIFSTOPPED(status)) return 0;
    // PTRACE_EVENT_STOP in the high bits: our interrupt, or a group-stop the kernel keeps after
    // the detach. No event: a signal-delivery-stop.
    return (status >> 16) == 0 ? WSTOPSIG(status) : 0;
}

// As collectStop, for a tracer process that ends without detaching: the stop is left to be
// reported again (WNOWAIT), because reporting it clears the signal a thread was stopped with, and
// a thread stopped on a signal gets it back when its tracer exits only if it was not cleared.
int peekStop(int tid) {
    siginfo_t info{};
    int r;
    do {
        r = waitid(P_PID, static_cast<id_t>(tid), &info, WSTOPPED | WEXITED | __WALL | WNOWAIT);
    } while (r < 0 && errno == EINTR);
    if (r != 0 || info.si_pid != tid) return -1;
    if (info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) return -1;
    if (info.si_code != CLD_TRAPPED && info.si_code != CLD_STOPPED) return 0;
    // si_status: the stop's code, PTRACE_EVENT_STOP << 8 for an interrupt or group-stop.
    return (info.si_status >> 8) == 0 ? (info.si_status & 0x7f) : 0;
}

// Detaches one thread, handing back the signal it was stopped with so that the target sees
// every signal it was sent. Async-signal-safe.
void release(int i) {
    if (!gInterrupted[i]) {  // seized, still running: only a stopped thread can be detached
        gInterrupted[i] = 1;
        if (ptrace(PTRACE_INTERRUPT, gSeized[i], nullptr, nullptr) != 0) {
            gSignal[i] = -1;
            gWaited[i] = 1;
        }
    }
    if (!gWaited[i]) {
        int sig = collectStop(gSeized[i]);
        gSignal[i] = sig;
        gWaited[i] = 1;
    }
    if (gSignal[i] < 0) return;  // the thread is gone
    ptrace(PTRACE_DETACH, gSeized[i], nullptr, reinterpret_cast<void*>(static_cast<long>(gSignal[i])));
}

void releaseAll() {
    for (int i = 0; i < gSeizedCount; ++i) release(i);
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

// A process in its own PID namespace: each thread's id there.
void LiveTarget::namespaceLwps() {
    if (namespacePids_.size() < 2) return;
    for (auto& t : threads_) t.namespaceLwp = namespaceTid(pid_, t.lwp);
}

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
    bool inTracer = tracer_.run([this] { stopAll(); }, &error);
    inTracer_ = false;
    if (!inTracer) {
        tracer_.end();
        copy_.abandon();  // it copied threads that run again
        seized_.clear();
        gSeizedCount = 0;
        threads_.clear();
        warnings_.resize(warningsBefore);
        prepareStop();
        stopAll();
    }
    stoppedAllMs_ = msSinceStop();
    startSnapshot();
    namespaceLwps();
    // Test hook: hold the stop so a test can kill pytstates mid-snapshot.
    if (const char* hold = std::getenv("PYTSTATES_TEST_HOLD_MS")) usleep(static_cast<useconds_t>(std::atoi(hold)) * 1000);
    if (threads_.empty()) {
        resume();
        throw std::runtime_error("process " + std::to_string(pid_) + " exited or has no thread that could be stopped");
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
                if (errno == ESRCH) continue;  // ended meanwhile
                int err = errno;
                if (seized_.empty()) {  // nothing to resume; the handlers are restored by resume()
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
                gSignal[slot] = -1;  // ended meanwhile: there is no stop to wait for
                gWaited[slot] = 1;
            }
            gInterrupted[slot] = 1;
        }
        for (int slot : interrupted) {
            int tid = gSeized[slot];
            if (gSignal[slot] < 0) continue;
            gSignal[slot] = inTracer_ ? peekStop(tid) : collectStop(tid);  // -1: gone, nothing to detach
            gWaited[slot] = 1;
            if (gSignal[slot] < 0) continue;
            OsThread t;
            if (!readThreadRegisters(tid, &t)) continue;
            t.signal = gSignal[slot];
            if (t.signal > 0 && round == 0) stoppedAt_ = std::min(stoppedAt_, seizing);  // a signal-delivery stop
            threads_.push_back(t);
            copy_.stopped().publish(t.sp, t.pthread);
        }
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
