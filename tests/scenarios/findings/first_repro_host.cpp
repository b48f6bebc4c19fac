// SPDX-License-Identifier: Apache-2.0
// The seed's first reproduction: a host that starts Python with the C API and lets its worker
// thread make the first pybind11 call. pybind11's internals are then created inside that first
// gil_scoped_acquire: get_internals() takes the GIL with PyGILState_Ensure (a new thread state T0),
// caches T0 under the host's new TLS key, and PyGILState_Release deletes T0 again. The acquire goes
// on with the cached, freed T0: PyEval_AcquireThread(T0) makes it the worker's current thread state
// and the GIL holder. When the acquire ends, its destructor deletes T0 a second time and the process
// dies (SIGSEGV in tstate_delete_common with glibc's safe-linked free lists; an abort for a double
// free on glibc 2.29-2.31).
//
//   first_repro_host crash   prints "FACTS {json}" and "READY" while the worker holds the GIL with
//                            T0, then goes on and crashes
//   first_repro_host pause   the same, then pauses there (pause.h), the GIL held with T0
//   first_repro_host abort   built with PYBIND11_DETAILED_ERROR_MESSAGES (scenario_first_repro_abort_host):
//                            the worker then runs a task on a thread state the main thread made for
//                            it (before T0 exists), swapped in under the acquire (PyThreadState_Swap),
//                            and the acquire's end finds the current state is not its cached, freed
//                            T0: pybind11_fail -> __cxa_throw
//                            out of a noexcept destructor -> std::terminate -> abort(). FACTS adds
//                            "task" (the swapped-in state).
#include <pybind11/embed.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "internals_key.h"
#include "pause.h"

namespace py = pybind11;

namespace {

std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    bool pause = argc > 1 && std::string(argv[1]) == "pause";
    bool abortMode = argc > 1 && std::string(argv[1]) == "abort";
    Py_Initialize();
    long mainLwp = syscall(SYS_gettid);
    // The task's state is made here, before T0 is made and freed: made later, malloc could give it
    // T0's freed block (seen on 3.13), and the acquire's end would find its T0 current after all.
    PyThreadState* task = abortMode ? PyThreadState_New(PyInterpreterState_Get()) : nullptr;
    PyThreadState* mainTstate = PyEval_SaveThread();
    std::thread worker([&, pause] {
        py::gil_scoped_acquire acquire;  // the first pybind11 call of the process
        auto& internals = py::detail::get_internals();
        auto* cached = static_cast<PyThreadState*>(PYBIND11_TLS_GET_VALUE(internals.tstate));
        py::exec("answer = sum(range(10))");
        if (abortMode) PyThreadState_Swap(task);  // the GIL is held: a state of the main interpreter, for a task
        std::printf("FACTS {\"pid\": %d, \"main_lwp\": %ld, \"main_tstate\": \"%s\", \"worker_lwp\": %ld, "
                    "\"worker_pthread\": \"%s\", \"t0\": \"%s\", \"current\": \"%s\", \"autotss\": \"%s\", "
                    "\"host_key\": %u, \"host_id\": \"%s\", \"task\": \"%s\"}\n",
                    getpid(), mainLwp, hex(mainTstate).c_str(), static_cast<long>(syscall(SYS_gettid)),
                    hex(reinterpret_cast<void*>(pthread_self())).c_str(), hex(cached).c_str(),
                    hex(_PyThreadState_UncheckedGet()).c_str(), hex(PyGILState_GetThisThreadState()).c_str(),
                    internalsTstateKey(), PYBIND11_INTERNALS_ID, hex(task).c_str());
        std::printf("READY\n");
        std::fflush(stdout);
        if (pause) pause_until_quit();
    });  // ~gil_scoped_acquire deletes T0 again
    worker.join();
    std::printf("no crash\n");
    return 0;
}
