// SPDX-License-Identifier: Apache-2.0
// Two threads whose TLS name one thread state: thread A gets its tstate through the host's
// pybind11 gil_scoped_acquire (stored under pybind11's pthread key) and waits with the GIL
// released; thread B copies that value into its own slot of the same key, as a pointer cached
// across threads would. With the argument "gil", B first takes its own thread state with
// PyGILState_Ensure and keeps the GIL while paused, so its TLS sources disagree while it holds
// the GIL (tls-mismatch). Prints FACTS, READY, then pauses.
#include <pybind11/embed.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "internals_key.h"
#include "pause.h"

namespace py = pybind11;

namespace {
std::mutex m;
std::condition_variable cv;
PyThreadState* aTstate = nullptr;
PyThreadState* bTstate = nullptr;
long aLwp = 0, bLwp = 0;
bool bDone = false;

void blockForever() {
    int fds[2];
    char c;
    if (pipe(fds) == 0)
        while (read(fds[0], &c, 1) != 0) {
        }
}
}  // namespace

int main(int argc, char** argv) {
    bool holdGil = argc > 1 && std::string(argv[1]) == "gil";
    py::scoped_interpreter interpreter;
    unsigned key = internalsTstateKey();
    py::gil_scoped_release release;
    std::thread a([] {
        py::gil_scoped_acquire acquire;
        {
            std::lock_guard<std::mutex> lock(m);
            aTstate = PyThreadState_Get();
            aLwp = syscall(SYS_gettid);
        }
        cv.notify_all();
        py::gil_scoped_release wait;
        blockForever();
    });
    std::thread b([key, holdGil] {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [] { return aTstate != nullptr; });
        if (holdGil) {
            lock.unlock();
            PyGILState_Ensure();  // its own thread state, and the GIL, kept while paused
            bTstate = PyThreadState_Get();
            lock.lock();
        }
        pthread_setspecific(key, aTstate);  // the deliberate copy
        bLwp = syscall(SYS_gettid);
        bDone = true;
        cv.notify_all();
        lock.unlock();
        blockForever();
    });
    {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [] { return bDone; });
    }
    std::printf("FACTS {\"pid\": %d, \"key\": %u, \"shared_tstate\": \"%p\", \"owner_lwp\": %ld, \"copier_lwp\": %ld, "
                "\"copier_tstate\": \"%p\"}\nREADY\n",
                getpid(), key, static_cast<void*>(aTstate), aLwp, bLwp, static_cast<void*>(bTstate));
    std::fflush(stdout);
    pause_until_quit();
}
