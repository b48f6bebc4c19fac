// SPDX-License-Identifier: Apache-2.0
// The seed's service with the real torch: a C++ host embedding Python with pybind11, built
// with -fabi-version=2 (ID ..._cxxabi1002__), imports Debian's torch (libtorch_python.so,
// ..._cxxabi1017__) on a worker thread under the host's gil_scoped_acquire and runs a tensor op.
// Leaving that scope deletes the worker's thread state, which torch's pybind11 key still caches.
// Prints FACTS and READY, then pauses (pause.h) without the GIL.
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

int main() {
    py::scoped_interpreter interpreter;
    unsigned hostKey = internalsTstateKey();
    py::gil_scoped_release release;
    std::thread worker([hostKey] {
        PyThreadState* used = nullptr;
        double sum = 0;
        {
            py::gil_scoped_acquire acquire;
            used = PyThreadState_Get();
            py::module_ torch = py::module_::import("torch");
            sum = torch.attr("ones")(3).attr("sum")().attr("item")().cast<double>();
        }
        std::printf("FACTS {\"pid\": %d, \"worker_lwp\": %ld, \"worker_pthread\": \"%p\", \"deleted_tstate\": \"%p\", "
                    "\"host_key\": %u, \"host_id\": \"%s\", \"sum\": %g}\nREADY\n",
                    getpid(), static_cast<long>(syscall(SYS_gettid)), reinterpret_cast<void*>(pthread_self()),
                    static_cast<void*>(used), hostKey, PYBIND11_INTERNALS_ID, sum);
        std::fflush(stdout);
        pause_until_quit();
    });
    worker.join();
}
