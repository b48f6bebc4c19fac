// SPDX-License-Identifier: Apache-2.0
// What a blocked thread waits for, told by the functions on its native stack: glibc's lock,
// join and system call entry points, CPython's GIL and lock functions. Names only: which object
// and which owner are read elsewhere (symbols/glibc/lock_layout, symbols/cpython/locks).
#pragma once

#include <string>

namespace pytstates {

// StopTheWorld: a free-threaded CPython's stop_the_world, which waits for every other attached
// thread state to detach.
enum class WaitKind { None, Gil, Mutex, Rwlock, Join, PythonLock, Condition, Futex, Syscall, StopTheWorld };

// "gil", "mutex", ... as docs/report.schema.json names them.
const char* waitKindName(WaitKind kind);

struct WaitFunction {
    WaitKind kind = WaitKind::None;
    // A kind that only says how a thread sleeps (condition, futex, system call): a function further
    // out may say what for (take_gil calls pthread_cond_timedwait).
    bool weak = false;
    std::string call;  // the system call, for WaitKind::Syscall ("read", "poll", "clock_nanosleep")
};

// The wait a function's name stands for; kind None when it is none. The name is a frame's
// function as the unwinder gives it (glibc's internal aliases, "__GI___poll", included).
WaitFunction waitFunction(const std::string& function);

// The name without glibc's alias prefixes ("__GI___", "__libc_") and GCC's clone suffixes
// (".lto_priv.0", ".constprop.0"): "__GI___poll" -> "poll", "rlock_acquire.lto_priv.0" -> "rlock_acquire".
std::string bareFunctionName(const std::string& function);

// The parking lot's waits (3.13+), which stop_the_world waits in further out: a stack that ends
// there is unwound deeper before it is called a Python lock's wait.
bool parksInCpython(const std::string& function);

// A plain _thread.lock's acquire, whose self is the lock: lock_PyThread_acquire_lock (<= 3.14),
// Argument Clinic's _thread_lock_acquire / _thread_lock___enter__ and their _impl (3.15).
bool acquiresPlainLock(const std::string& function);

// Free-threaded CPython's stop of the world, by the functions on the stopping thread's stack:
// stop_the_world waiting for its event (the other threads detaching), not for its mutex; a stop of
// every interpreter (_PyEval_StopTheWorldAll); a stop asked for while a thread state is made
// (3.13's first new state after the main thread's makes deferred objects immortal).
bool waitsForStopEvent(const std::string& function);
bool stopsEveryInterpreter(const std::string& function);
bool makesThreadState(const std::string& function);

// A function that takes the GIL for its caller: the frame to show when take_gil itself was
// inlined away (PyEval_RestoreThread, PyGILState_Ensure, ...).
bool takesGil(const std::string& function);

}  // namespace pytstates
