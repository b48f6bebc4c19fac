// SPDX-License-Identifier: Apache-2.0
// What the binding scenario modules share: workers parked until release(), and the hand-off by
// which a worker tells the importing thread it has filled in its facts.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>

namespace scenario {

inline std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

// Never destroyed: a condition variable destroyed at exit with threads still waiting on it blocks
// exit() for ever (glibc waits for its waiters).
inline std::mutex& parkMutex = *new std::mutex;
inline std::condition_variable& parkChanged = *new std::condition_variable;
inline bool released = false;

inline void parkUntilReleased() {
    std::unique_lock<std::mutex> lock(parkMutex);
    parkChanged.wait(lock, [] { return released; });
}

inline void releaseParked() {
    {
        std::lock_guard<std::mutex> lock(parkMutex);
        released = true;
    }
    parkChanged.notify_all();
}

// A worker fills in its facts, then signal(); the caller wait()s for that.
struct Handoff {
    std::mutex m;
    std::condition_variable cv;
    bool ready = false;
    void signal() {
        {
            std::lock_guard<std::mutex> lock(m);
            ready = true;
        }
        cv.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return ready; });
    }
};

}  // namespace scenario
