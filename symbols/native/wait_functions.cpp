// SPDX-License-Identifier: Apache-2.0
#include "symbols/native/wait_functions.h"

#include <cstring>
#include <set>

namespace pytstates {

const char* waitKindName(WaitKind kind) {
    switch (kind) {
        case WaitKind::None: return "none";
        case WaitKind::Gil: return "gil";
        case WaitKind::Mutex: return "mutex";
        case WaitKind::Rwlock: return "rwlock";
        case WaitKind::Join: return "join";
        case WaitKind::PythonLock: return "python-lock";
        case WaitKind::Condition: return "condition";
        case WaitKind::Futex: return "futex";
        case WaitKind::Syscall: return "syscall";
        case WaitKind::StopTheWorld: return "stop-the-world";
    }
    return "none";
}

namespace {

// glibc names one function several ways: "__GI___libc_read", "__libc_read", "___pthread_join",
// "__poll_chk", "__clock_nanosleep_time64". The bare name: no leading underscores, no "GI_" or
// "libc_" prefix, no "_time64" suffix.
std::string bare(std::string name) {
    // GCC's clones: "rlock_acquire.lto_priv.0", "__new_sem_wait_slow64.constprop.0", "f.isra.0".
    size_t dot = name.find('.');
    if (dot != std::string::npos && dot > 0) name.erase(dot);
    for (bool again = true; again;) {
        again = false;
        size_t u = name.find_first_not_of('_');
        if (u != 0 && u != std::string::npos) name.erase(0, u), again = true;
        for (const char* prefix : {"GI_", "libc_"})
            if (name.rfind(prefix, 0) == 0) name.erase(0, std::strlen(prefix)), again = true;
    }
    for (const char* suffix : {"_time64", "_nocancel", "_chk"}) {
        size_t n = std::strlen(suffix);
        if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) name.erase(name.size() - n);
    }
    return name;
}

const std::set<std::string>& syscalls() {
    // The blocking calls a user names: the wrapper's name is the call.
    static const std::set<std::string> names = {
        "read", "readv", "pread", "pread64", "preadv", "write", "writev", "pwrite", "pwrite64", "poll", "ppoll",
        "select", "pselect", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2", "nanosleep", "clock_nanosleep",
        "sleep", "usleep", "pause", "sigsuspend", "sigwait", "sigwaitinfo", "sigtimedwait", "accept", "accept4",
        "connect", "recv", "recvfrom", "recvmsg", "recvmmsg", "send", "sendto", "sendmsg", "wait", "wait4", "waitpid",
        "waitid", "open", "openat", "open64", "flock", "fcntl", "fcntl64", "lockf", "msgrcv", "msgsnd", "semop",
        "semtimedop", "mq_receive", "mq_timedreceive", "io_getevents", "fsync", "fdatasync", "ioctl", "splice"};
    return names;
}

}  // namespace

std::string bareFunctionName(const std::string& function) { return bare(function); }

WaitFunction waitFunction(const std::string& function) {
    WaitFunction w;
    if (function.empty()) return w;
    std::string b = bare(function);
    // CPython: take_gil in every version with a GIL (a static function; kept as a frame of its own
    // by the DWARF of an inlined call).
    if (b == "take_gil") return {WaitKind::Gil, false, {}};
    // A free-threaded CPython (3.13+) stopping the world: _PyEval_StopTheWorld (one interpreter),
    // _PyEval_StopTheWorldAll (all), both through the static stop_the_world.
    if (b == "stop_the_world" || b == "PyEval_StopTheWorld" || b == "PyEval_StopTheWorldAll") return {WaitKind::StopTheWorld, false, {}};
    // glibc mutexes: the plain, robust and PI lock paths, their timed forms, and the low-level wait.
    static const std::set<std::string> mutex = {"pthread_mutex_lock", "pthread_mutex_lock_full", "pthread_mutex_timedlock",
                                                "pthread_mutex_clocklock", "pthread_mutex_clocklock_common",
                                                "lll_lock_wait", "lll_robust_lock_wait", "lll_timedlock_wait",
                                                "mutex_lock_full", "pthread_mutex_cond_lock", "pthread_mutex_cond_lock_full"};
    if (mutex.count(b)) return {WaitKind::Mutex, false, {}};
    if (b.rfind("pthread_rwlock_", 0) == 0 && b.find("unlock") == std::string::npos &&
        b.find("lock") != std::string::npos && b.find("init") == std::string::npos && b.find("destroy") == std::string::npos &&
        b.find("try") == std::string::npos)
        return {WaitKind::Rwlock, false, {}};
    static const std::set<std::string> join = {"pthread_join", "pthread_clockjoin_ex", "pthread_clockjoin_np",
                                               "pthread_timedjoin_np", "pthread_timedjoin_ex"};
    if (join.count(b)) return {WaitKind::Join, false, {}};
    // CPython's locks: _thread.lock, _thread.RLock, PyMutex and the parking lot (3.13+).
    static const std::set<std::string> pyLock = {"PyThread_acquire_lock_timed", "PyThread_acquire_lock", "acquire_timed",
                                                 "rlock_acquire", "lock_PyThread_acquire_lock", "lock_acquire",
                                                 "thread_lock_acquire", "thread_lock_acquire_impl", "thread_lock___enter__",
                                                 "thread_lock___enter___impl",
                                                 "PyMutex_LockTimed", "PyMutex_LockSlow", "PyMutex_Lock",
                                                 "PyRecursiveMutex_Lock", "PyRecursiveMutex_LockTimed",
                                                 "PyParkingLot_Park", "PySemaphore_Wait",
                                                 // inlined into _PySemaphore_Wait (3.13+): DWARF shows it innermost
                                                 "PySemaphore_PlatformWait"};
    if (pyLock.count(b)) return {WaitKind::PythonLock, false, {}};
    static const std::set<std::string> condition = {"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
                                                    "pthread_cond_wait_common", "condition_variable::wait",
                                                    "sem_wait", "sem_timedwait", "sem_clockwait", "do_futex_wait",
                                                    "new_sem_wait_slow"};
    if (condition.count(b) || function == "std::condition_variable::wait" || function == "std::condition_variable::__wait_until_impl")
        return {WaitKind::Condition, true, {}};
    if (b.rfind("futex", 0) == 0 || b == "lll_lock_wait_private" || b == "syscall_cancel_arch" || b == "internal_syscall_cancel" ||
        b == "syscall_cancel")
        return {WaitKind::Futex, true, {}};
    if (syscalls().count(b)) return {WaitKind::Syscall, true, b};
    // syscall(2): which call only its number tells (commands/ reads it from the registers).
    if (b == "syscall") return {WaitKind::Syscall, true, {}};
    return w;
}

bool parksInCpython(const std::string& function) {
    std::string b = bare(function);
    return b == "PySemaphore_Wait" || b == "PySemaphore_PlatformWait" || b == "PyParkingLot_Park" || b == "PyEvent_WaitTimed";
}

bool acquiresPlainLock(const std::string& function) {
    static const std::set<std::string> names = {"lock_PyThread_acquire_lock", "thread_lock_acquire", "thread_lock_acquire_impl",
                                                "thread_lock___enter__", "thread_lock___enter___impl"};
    return names.count(bare(function)) != 0;
}

bool waitsForStopEvent(const std::string& function) { return bare(function) == "PyEvent_WaitTimed"; }

bool stopsEveryInterpreter(const std::string& function) { return bare(function) == "PyEval_StopTheWorldAll"; }

bool makesThreadState(const std::string& function) {
    std::string b = bare(function);
    return b == "new_threadstate" || b == "PyThreadState_New";
}

bool takesGil(const std::string& function) {
    static const std::set<std::string> names = {"PyEval_RestoreThread", "PyEval_AcquireThread", "PyEval_AcquireLock",
                                                "PyGILState_Ensure", "PyThreadState_Attach", "PyEval_AcquireLock",
                                                "PyEval_ReInitThreads", "PyThreadState_Swap", "handle_eval_breaker",
                                                "Py_HandlePending", "eval_frame_handle_pending"};
    return names.count(bare(function)) != 0;
}

}  // namespace pytstates
