// SPDX-License-Identifier: Apache-2.0
// The seed's crash with the real torch (scripts/demo's second scenario): the seed's service (a
// C++ host embedding Python with pybind11, built with -fabi-version=2) hands "files" to a worker
// thread; file 1 imports Debian's torch there, so torch's own pybind11 (another internals record,
// another TLS key) creates its internals on the worker and caches the worker's thread state,
// which the host's gil_scoped_acquire deletes when file 1 ends. Each file runs a backward pass
// with a tensor hook: torch releases the GIL for the autograd engine and its
// gil_scoped_acquire takes it back for the hook with the thread state its key caches, on file 2
// a freed one.
//
//   torch_crash_host crash   prints FACTS and READY after file 1, then goes on (and crashes)
//   torch_crash_host pause   pauses after file 1 (torch's key holds the freed thread state)
#include <pybind11/embed.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "internals_key.h"
#include "pause.h"

namespace py = pybind11;

int main(int argc, char** argv) {
    bool crash = argc > 1 && std::strcmp(argv[1], "crash") == 0;
    py::scoped_interpreter interpreter;
    unsigned hostKey = internalsTstateKey();
    py::gil_scoped_release release;
    std::thread worker([&] {
        std::vector<std::string> fileBuffers;
        size_t freedBytes = 344;
        for (int file = 1; file <= 3; ++file) {
            // Per-file state as large as the thread state deleted last (as in seed_host.cpp): it
            // takes that block from malloc, so the stale pointer reads this text.
            fileBuffers.emplace_back(freedBytes - 1, static_cast<char>('a' + file));
            PyThreadState* used = nullptr;
            double grad = 0;
            {
                py::gil_scoped_acquire acquire;  // the host's pybind11: creates this thread's tstate
                used = PyThreadState_Get();
                freedBytes = malloc_usable_size(used);
                py::dict scope;
                py::exec(R"(
import torch
x = torch.ones(3, requires_grad=True)
x.register_hook(lambda g: g * 2)
x.sum().backward()
grad = float(x.grad.sum())
)", scope);
                grad = scope["grad"].cast<double>();
            }  // deletes `used`; torch's key still names it
            if (file == 1) {
                std::printf("FACTS {\"pid\": %d, \"worker_lwp\": %ld, \"worker_pthread\": \"%p\", \"deleted_tstate\": \"%p\", "
                            "\"host_key\": %u, \"host_id\": \"%s\", \"grad\": %g}\nREADY\n",
                            getpid(), static_cast<long>(syscall(SYS_gettid)), reinterpret_cast<void*>(pthread_self()),
                            static_cast<void*>(used), hostKey, PYBIND11_INTERNALS_ID, grad);
                std::fflush(stdout);
                if (!crash) pause_until_quit();
            }
        }
        std::printf("no crash after 3 files\n");
        std::fflush(stdout);
    });
    worker.join();
}
