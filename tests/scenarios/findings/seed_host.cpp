// SPDX-License-Identifier: Apache-2.0
// The seed's service, rebuilt: a C++ host that embeds Python with pybind11, built with
// -fabi-version=2 (pybind11 ID ..._cxxabi1002__, like the seed's GCC 4.8.5), hands "files" to a
// worker thread, and the worker creates a checker per file that imports seed_module (ID
// ..._cxxabi1017__) under the host's gil_scoped_acquire.
//
//   seed_host svr2 pause   import on the worker; pause after file 1 (module key holds a freed tstate)
//   seed_host svr2 crash   import on the worker; go on to file 2 and crash like the seed
//   seed_host svr1 pause   import on the main thread first (the seed's svr1.0): no stale pointer
//   seed_host svr2 crash-held
//                          as crash, but file 2 calls work_held, whose acquire takes the stale
//                          state while the worker holds the GIL with file 2's own state: the
//                          crash comes with the GIL held by another state of the crashing thread.
//                          FACTS (with held_tstate) and READY come at file 2, just before the call.
//   seed_host svr2 crash-py
//                          as crash, but each file's work is called from Python (seed_logic.py's
//                          on_recv_msg), as the seed's service did: the crash has Python frames.
//
// Prints "FACTS {json}" and "READY" before pausing (pause.h); the pause blocks without the GIL.
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

namespace {

long gettid_() { return syscall(SYS_gettid); }

unsigned hostKey() {
    return internalsTstateKey();
}

std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s svr1|svr2 pause|crash\n", argv[0]);
        return 2;
    }
    bool importOnMain = std::strcmp(argv[1], "svr1") == 0;
    bool held = std::strcmp(argv[2], "crash-held") == 0;
    bool viaPython = std::strcmp(argv[2], "crash-py") == 0;
    bool crash = held || viaPython || std::strcmp(argv[2], "crash") == 0;
    std::string dir = argv[0];
    dir = dir.substr(0, dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));

    py::scoped_interpreter interpreter;
    py::module_::import("sys").attr("path").attr("insert")(0, dir.empty() ? "." : dir);
    PyThreadState* mainTstate = PyThreadState_Get();
    if (importOnMain) py::module_::import("seed_module");
    unsigned host = hostKey();
    long mainLwp = gettid_();

    py::gil_scoped_release releaseForWorkers;
    std::thread worker([&] {
        std::vector<std::string> fileBuffers;
        size_t freedBytes = 344;  // malloc's usable size of the thread state the last file deleted
        PyThreadState* firstUsed = nullptr;
        for (int file = 1; file <= 3; ++file) {
            // Per-file state, kept while the service runs (as the seed's MsgChecker was): as large
            // as the thread state deleted last, it takes that block from malloc, as the seed's
            // did, so a stale pointer to it reads this text (Python 3.11's thread state: 344
            // bytes; 3.13's is larger, and without this the next thread state reuses the block).
            fileBuffers.emplace_back(freedBytes - 1, static_cast<char>('a' + file));
            PyThreadState* used = nullptr;
            unsigned moduleKey = 0;
            std::string moduleId;
            {
                py::gil_scoped_acquire acquire;  // the host's pybind11: creates this thread's tstate
                used = PyThreadState_Get();
                freedBytes = malloc_usable_size(used);
                py::module_ checker = py::module_::import("seed_module");  // file 1: first import, on this thread
                moduleKey = checker.attr("internals_key")().cast<unsigned>();
                moduleId = checker.attr("internals_id").cast<std::string>();
                if (held && file == 2) {
                    std::printf("FACTS {\"pid\": %d, \"mode\": \"%s\", \"main_lwp\": %ld, \"main_tstate\": \"%s\", "
                                "\"worker_lwp\": %ld, \"worker_pthread\": \"%s\", \"deleted_tstate\": \"%s\", "
                                "\"held_tstate\": \"%s\", \"host_key\": %u, \"host_id\": \"%s\", \"module_key\": %u, "
                                "\"module_id\": \"%s\"}\nREADY\n",
                                getpid(), argv[1], mainLwp, hex(mainTstate).c_str(), gettid_(),
                                hex(reinterpret_cast<void*>(pthread_self())).c_str(), hex(firstUsed).c_str(),
                                hex(used).c_str(), host, PYBIND11_INTERNALS_ID, moduleKey, moduleId.c_str());
                    std::fflush(stdout);
                    checker.attr("work_held")(file);  // takes the stale state with the GIL held: crashes
                } else if (viaPython) {
                    py::module_::import("seed_logic").attr("on_recv_msg")(checker, file);
                } else {
                    checker.attr("work")(file);
                }
            }  // the host's gil_scoped_acquire deletes `used` and clears only the host's key
            if (file == 1) firstUsed = used;
            if (file == 1 && !held) {
                std::printf("FACTS {\"pid\": %d, \"mode\": \"%s\", \"main_lwp\": %ld, \"main_tstate\": \"%s\", "
                            "\"worker_lwp\": %ld, \"worker_pthread\": \"%s\", \"deleted_tstate\": \"%s\", "
                            "\"host_key\": %u, \"host_id\": \"%s\", \"module_key\": %u, \"module_id\": \"%s\"}\n",
                            getpid(), argv[1], mainLwp, hex(mainTstate).c_str(), gettid_(),
                            hex(reinterpret_cast<void*>(pthread_self())).c_str(), hex(used).c_str(), host,
                            PYBIND11_INTERNALS_ID, moduleKey, moduleId.c_str());
                std::printf("READY\n");
                std::fflush(stdout);
                if (!crash) pause_until_quit();
            }
        }
        std::printf("no crash after 3 files\n");
        std::fflush(stdout);
    });
    worker.join();
    return 0;
}
