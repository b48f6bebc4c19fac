// SPDX-License-Identifier: Apache-2.0
// Real hangs and aborts of a C++ service that embeds Python with pybind11, one per mode. Each
// prints "FACTS {json}" (its threads' gettid(), the lock addresses) and "READY" once every thread
// has taken what it holds and is about to block; the blocking call follows at once.
//
//   hang_host gil-mutex   A holds the GIL and locks std::mutex M; B holds M and takes the GIL
//   hang_host cycle3      A: GIL, waits M1; B: M1, waits M2; C: M2, waits the GIL
//   hang_host join        main holds the GIL and joins W; W waits in PyGILState_Ensure
//   hang_host rwlock      W holds a pthread rwlock for writing and takes the GIL; R holds the GIL
//                         and asks the rwlock for reading
//   hang_host mutex-abba  T1 holds M1 and asks for M2, T2 holds M2 and asks for M1, both attached
//                         to Python (at once only where there is no GIL: a free-threaded build)
//   hang_host read|poll|sleep|syscall  H holds the GIL across read()/poll()/sleep() or
//                         syscall(SYS_read, ...) (the call told by its number alone); two Python threads wait
//   hang_host stw-mutex|stw-blocked  free-threaded only: A stops the world (gc.collect()) while B is
//                         attached and blocked: on a mutex the joining main thread holds, or for ever
//   hang_host stw-new-tstate  free-threaded 3.13 only: a worker's first thread state stops the world
//                         while the main thread blocks attached
//   hang_host busy        the control: two Python threads compute, one C++ thread waits on a
//                         std::condition_variable, one Python thread on threading.Event
//   hang_host throw       a worker's std::runtime_error escapes (std::terminate)
//   hang_host pyerror     a worker's Python ValueError escapes as pybind11::error_already_set
//   hang_host assert      a failed assert()
#undef NDEBUG
#include <pybind11/embed.h>
#include <poll.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace py = pybind11;

namespace {

long gettid_() { return syscall(SYS_gettid); }

std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

// Counts threads that reached their blocking point's doorstep.
struct Gate {
    std::mutex m;
    std::condition_variable cv;
    int arrived = 0;
    void arrive() {
        std::lock_guard<std::mutex> l(m);
        ++arrived;
        cv.notify_all();
    }
    void waitFor(int n) {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return arrived >= n; });
    }
};

std::atomic<long> lwpA{0}, lwpB{0}, lwpC{0};

void ready(const std::string& facts) {
    std::printf("FACTS {\"pid\": %d, \"main_lwp\": %ld%s}\nREADY\n", getpid(), static_cast<long>(getpid()), facts.c_str());
    std::fflush(stdout);
}

// Blocks for ever without the GIL.
[[noreturn]] void park() {
    for (;;) pause();
}

std::mutex m1, m2;
pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

void gilMutex() {
    Gate gate;
    PyThreadState* saved = PyEval_SaveThread();
    (void)saved;
    std::thread a([&] {
        lwpA = gettid_();
        py::gil_scoped_acquire gil;
        gate.arrive();
        gate.waitFor(3);  // B holds M
        std::lock_guard<std::mutex> l(m1);  // waits for B
    });
    std::thread b([&] {
        lwpB = gettid_();
        gate.waitFor(1);  // A holds the GIL
        std::lock_guard<std::mutex> l(m1);
        gate.arrive();
        gate.arrive();
        py::gil_scoped_acquire gil;  // waits for A
    });
    gate.waitFor(3);
    ready(", \"holder_of_gil\": " + std::to_string(lwpA) + ", \"holder_of_mutex\": " + std::to_string(lwpB) +
          ", \"mutex\": \"" + hex(&m1) + "\"");
    park();
}

void cycle3() {
    Gate gate;
    PyEval_SaveThread();
    std::thread a([&] {
        lwpA = gettid_();
        py::gil_scoped_acquire gil;
        gate.arrive();
        gate.waitFor(3);
        std::lock_guard<std::mutex> l(m1);  // held by B
    });
    std::thread b([&] {
        lwpB = gettid_();
        std::lock_guard<std::mutex> l(m1);
        gate.arrive();
        gate.waitFor(3);
        std::lock_guard<std::mutex> l2(m2);  // held by C
    });
    std::thread c([&] {
        lwpC = gettid_();
        std::lock_guard<std::mutex> l(m2);
        gate.waitFor(2);
        gate.arrive();
        py::gil_scoped_acquire gil;  // held by A
    });
    gate.waitFor(3);
    ready(", \"a\": " + std::to_string(lwpA) + ", \"b\": " + std::to_string(lwpB) + ", \"c\": " + std::to_string(lwpC) +
          ", \"m1\": \"" + hex(&m1) + "\", \"m2\": \"" + hex(&m2) + "\"");
    park();
}

void joinHoldingGil() {
    // The main thread keeps the GIL it took in Py_Initialize.
    std::atomic<bool> started{false};
    pthread_t w;
    pthread_create(&w, nullptr, [](void* arg) -> void* {
        lwpA = gettid_();
        static_cast<std::atomic<bool>*>(arg)->store(true);
        PyGILState_STATE s = PyGILState_Ensure();  // the main thread holds the GIL
        PyGILState_Release(s);
        return nullptr;
    }, &started);
    while (!started) std::this_thread::yield();
    // "sleepers": the test waits until both sleep in the kernel (pthread_join here, take_gil there)
    ready(", \"worker\": " + std::to_string(lwpA) + ", \"worker_pthread\": \"" + hex(reinterpret_cast<void*>(w)) +
          "\", \"sleepers\": [" + std::to_string(getpid()) + ", " + std::to_string(lwpA) + "]");
    pthread_join(w, nullptr);
}

// Attached to Python where that does not serialize them (no GIL), else detached: the cycle is the
// two mutexes alone either way.
void mutexAbba() {
#ifdef Py_GIL_DISABLED
    constexpr bool attached = true;
#else
    constexpr bool attached = false;
#endif
    Gate gate;
    PyEval_SaveThread();
    if (attached) {
        // A free-threaded CPython 3.13 stops the world in the first PyThreadState_New after the
        // main thread's (_PyGC_ImmortalizeDeferredObjects). Made by T1 and T2 at once, it can come
        // from the second one after the first attached and blocked in the gate: the world never
        // stops, and READY never comes (stw-new-tstate is that hang on purpose). One thread state
        // made and deleted here first, while nothing is attached.
        std::thread([] { py::gil_scoped_acquire once; }).join();
    }
    auto take = [&](std::atomic<long>& lwp, std::mutex& first, std::mutex& second) {
        lwp = gettid_();
        std::optional<py::gil_scoped_acquire> python;
        if (attached) python.emplace();
        std::lock_guard<std::mutex> l(first);
        gate.arrive();
        gate.waitFor(3);
        std::lock_guard<std::mutex> l2(second);  // the other holds it
    };
    std::thread t1([&] { take(lwpA, m1, m2); });
    std::thread t2([&] { take(lwpB, m2, m1); });
    gate.waitFor(2);
    ready(", \"t1\": " + std::to_string(lwpA) + ", \"t2\": " + std::to_string(lwpB) + ", \"m1\": \"" + hex(&m1) + "\", \"m2\": \"" +
          hex(&m2) + "\", \"gil\": " + (attached ? "false" : "true"));
    gate.arrive();
    park();
}

#ifdef Py_GIL_DISABLED
// A free-threaded build's stop-the-world waits for every other attached thread state to detach.
// B is attached and blocks in C++ without detaching; A runs gc.collect(), which stops the world.
//   stw-mutex    B waits for std::mutex M, which the main thread holds while it joins A: a cycle
//   stw-blocked  B waits on a condition variable nobody signals: no cycle, the world never stops
void stopTheWorld(bool cycle) {
    Gate gate;
    // Imported here: importing gc enables the GIL for a moment, a stop of every interpreter.
    py::object collect = py::module_::import("gc").attr("collect");
    PyEval_SaveThread();
    std::thread([] { py::gil_scoped_acquire once; }).join();  // the first new thread state's own stop (mutexAbba)
    std::unique_lock<std::mutex> held(m1, std::defer_lock);
    if (cycle) held.lock();
    std::thread b([&] {
        lwpB = gettid_();
        py::gil_scoped_acquire attached;
        gate.arrive();
        if (cycle) {
            std::lock_guard<std::mutex> l(m1);  // the main thread holds it
        } else {
            gate.waitFor(100);  // never
        }
    });
    gate.waitFor(1);
    std::thread a([&] {
        lwpA = gettid_();
        py::gil_scoped_acquire attached;
        gate.arrive();
        collect();  // waits for B to detach
    });
    gate.waitFor(2);
    ready(", \"stopper\": " + std::to_string(lwpA) + ", \"attached\": " + std::to_string(lwpB) + ", \"mutex\": \"" + hex(&m1) +
          "\", \"stopper_pthread\": \"" + hex(reinterpret_cast<void*>(a.native_handle())) + "\"");
    if (cycle) a.join();  // holding M
    park();
}

// CPython 3.13t's first PyThreadState_New after the main thread's stops the world (to make
// deferred objects immortal): a worker's first gil_scoped_acquire waits for the main thread, which
// stays attached while it blocks. The stop has no thread state of its own.
void stopForNewThreadState() {
    Gate gate;
    std::thread a([&] {
        lwpA = gettid_();
        gate.arrive();
        gate.waitFor(2);
        py::gil_scoped_acquire attached;  // new_threadstate -> _PyGC_ImmortalizeDeferredObjects: waits for main
    });
    gate.waitFor(1);
    ready(", \"stopper\": " + std::to_string(lwpA) + ", \"attached\": " + std::to_string(getpid()) + ", \"new_tstate\": true");
    gate.arrive();
    gate.waitFor(100);  // never, attached since Py_Initialize
    park();
}
#endif

void rwlockWriter() {
    Gate gate;
    PyEval_SaveThread();
    std::thread r([&] {
        lwpA = gettid_();
        py::gil_scoped_acquire gil;
        gate.arrive();
        gate.waitFor(3);
        pthread_rwlock_rdlock(&rw);  // the writer holds it
    });
    std::thread w([&] {
        lwpB = gettid_();
        gate.waitFor(1);
        pthread_rwlock_wrlock(&rw);
        gate.arrive();
        gate.arrive();
        py::gil_scoped_acquire gil;  // R holds it
    });
    gate.waitFor(3);
    ready(", \"reader\": " + std::to_string(lwpA) + ", \"writer\": " + std::to_string(lwpB) + ", \"rwlock\": \"" + hex(&rw) + "\"");
    park();
}

// H holds the GIL across a blocking call; two Python threads wait for it.
void gilAcrossBlocking(const std::string& how) {
    int fds[2];
    if (pipe(fds) != 0) std::abort();
    py::exec(R"(
import threading, ctypes
lwps = []
started = threading.Barrier(3)
def spin():
    lwps.append(threading.get_native_id())
    started.wait()
    n = 0
    while True:
        n += 1
workers = [threading.Thread(target=spin, daemon=True) for _ in range(2)]
for t in workers: t.start()
started.wait()
)");
    std::string lwps = py::str(py::module_::import("__main__").attr("lwps")).cast<std::string>();
    PyEval_SaveThread();
    Gate gate;
    std::thread h([&] {
        lwpA = gettid_();
        py::gil_scoped_acquire gil;
        gate.arrive();
        char c;
        if (how == "read") {
            ssize_t n = read(fds[0], &c, 1);  // never written
            (void)n;
        } else if (how == "syscall") {
            long n = syscall(SYS_read, fds[0], &c, 1);  // never written
            (void)n;
        } else if (how == "poll") {
            struct pollfd p = {fds[0], POLLIN, 0};
            poll(&p, 1, -1);
        } else {
            sleep(100000);
        }
    });
    gate.waitFor(1);
    ready(", \"holder\": " + std::to_string(lwpA) + ", \"waiters\": " + lwps + ", \"call\": \"" + how + "\"");
    park();
}

void busy() {
    py::exec(R"(
import threading
lwps = []
event = threading.Event()
started = threading.Barrier(4)
def spin():
    lwps.append(threading.get_native_id())
    started.wait()
    n = 0
    while True:
        n += 1
def wait_event():
    lwps.append(threading.get_native_id())
    started.wait()
    event.wait()
workers = [threading.Thread(target=f, daemon=True) for f in (spin, spin, wait_event)]
for t in workers: t.start()
started.wait()
)");
    std::string lwps = py::str(py::module_::import("__main__").attr("lwps")).cast<std::string>();
    PyEval_SaveThread();
    static std::mutex m;
    static std::condition_variable cv;
    std::thread c([&] {
        lwpA = gettid_();
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [] { return false; });
    });
    while (!lwpA) std::this_thread::yield();
    ready(", \"python\": " + lwps + ", \"condition\": " + std::to_string(lwpA));
    park();
}

void throwing(bool python) {
    PyEval_SaveThread();
    std::thread w([python] {
        lwpA = gettid_();
        if (!python) {
            ready(", \"worker\": " + std::to_string(lwpA) + ", \"type\": \"std::runtime_error\", \"message\": \"config file /etc/svc.conf: bad port\"");
            throw std::runtime_error("config file /etc/svc.conf: bad port");
        }
        py::gil_scoped_acquire gil;
        ready(", \"worker\": " + std::to_string(lwpA) + ", \"type\": \"pybind11::error_already_set\", \"message\": \"ValueError: bad value 42\"");
        py::exec("raise ValueError('bad value 42')");
    });
    w.join();
}

void failedAssert() {
    int replicas = 2;
    ready(", \"worker\": " + std::to_string(gettid_()) + ", \"line\": " + std::to_string(__LINE__ + 1));
    assert(replicas == 3 && "the config says three");
}

}  // namespace

int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "";
    Py_Initialize();
    // pybind11's internals made here, on the main thread: made inside a worker's first
    // gil_scoped_acquire they would cache a deleted thread state (the seed's first reproduction).
    py::detail::get_internals();
    if (mode == "gil-mutex") gilMutex();
    else if (mode == "cycle3") cycle3();
    else if (mode == "join") joinHoldingGil();
    else if (mode == "rwlock") rwlockWriter();
    else if (mode == "mutex-abba") mutexAbba();
#ifdef Py_GIL_DISABLED
    else if (mode == "stw-mutex" || mode == "stw-blocked") stopTheWorld(mode == "stw-mutex");
    else if (mode == "stw-new-tstate") stopForNewThreadState();
#endif
    else if (mode == "read" || mode == "poll" || mode == "sleep" || mode == "syscall") gilAcrossBlocking(mode);
    else if (mode == "busy") busy();
    else if (mode == "throw") throwing(false);
    else if (mode == "pyerror") throwing(true);
    else if (mode == "assert") failedAssert();
    else {
        std::fprintf(stderr, "usage: hang_host gil-mutex|cycle3|join|rwlock|mutex-abba|read|poll|sleep|syscall|busy|throw|pyerror|assert"
                             "|stw-mutex|stw-blocked|stw-new-tstate (free-threaded)\n");
        return 2;
    }
    return 0;
}
