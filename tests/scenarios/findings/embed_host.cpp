// SPDX-License-Identifier: Apache-2.0
// A C++ host that embeds Python with pybind11: the main thread initialises the interpreter and
// releases the GIL; two worker threads run Python (embed_logic.py): one waits in
// threading.Event.wait (GIL released), the other calls back into C++ and blocks there holding the
// GIL. Prints FACTS (each thread's LWP, pthread, tstate and the frame it waits in) and READY,
// then pauses (pause.h).
#include <pybind11/embed.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pause.h"

namespace py = pybind11;

namespace {

struct Fact {
    long lwp;
    unsigned long pthread;
    PyThreadState* tstate;
    std::string function;
    int line;
};
std::mutex m;
std::condition_variable cv;
std::vector<Fact> facts;
bool holderReady = false;

void report() {
    PyFrameObject* frame = PyEval_GetFrame();  // the Python caller of report()
    PyCodeObject* code = PyFrame_GetCode(frame);
    Fact f{syscall(SYS_gettid), static_cast<unsigned long>(pthread_self()), PyThreadState_Get(),
           py::cast<std::string>(py::handle(code->co_name)), PyFrame_GetLineNumber(frame) + 1};
    Py_DECREF(code);
    std::lock_guard<std::mutex> lock(m);
    facts.push_back(f);
    cv.notify_all();
}

void blockHoldingTheGil() {
    {
        std::lock_guard<std::mutex> lock(m);
        holderReady = true;
    }
    cv.notify_all();
    pause_until_quit();  // never returns; the GIL stays with this thread
}

}  // namespace

PYBIND11_EMBEDDED_MODULE(embed_host, mod) {
    mod.def("report", &report);
    mod.def("block", &blockHoldingTheGil);
}

int main(int, char** argv) {
    std::string dir = argv[0];
    dir = dir.substr(0, dir.rfind('/'));
    py::scoped_interpreter interpreter;
    py::module_::import("sys").attr("path").attr("insert")(0, dir);
    py::module_::import("embed_logic");
    PyThreadState* mainTstate = PyThreadState_Get();
    long mainLwp = syscall(SYS_gettid);
    py::gil_scoped_release release;
    std::thread waiter([] {
        py::gil_scoped_acquire acquire;
        auto host = py::module_::import("embed_host");
        py::module_::import("embed_logic").attr("wait_for_work")(host.attr("report"));
    });
    {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [] { return facts.size() == 1; });
    }
    std::thread holder([] {
        py::gil_scoped_acquire acquire;
        auto host = py::module_::import("embed_host");
        py::module_::import("embed_logic").attr("hold_the_gil")(host.attr("report"), host.attr("block"));
    });
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [] { return holderReady; });
    std::printf("FACTS {\"pid\": %d, \"python_version\": \"%s\", \"main_lwp\": %ld, \"main_tstate\": \"%p\", \"gil_holder_lwp\": %ld, \"threads\": [",
                getpid(), PY_VERSION, mainLwp, static_cast<void*>(mainTstate), facts[1].lwp);
    for (size_t i = 0; i < facts.size(); ++i)
        std::printf("%s{\"lwp\": %ld, \"pthread\": \"0x%lx\", \"tstate\": \"%p\", \"function\": \"%s\", \"file\": \"embed_logic.py\", \"line\": %d}",
                    i ? ", " : "", facts[i].lwp, facts[i].pthread, static_cast<void*>(facts[i].tstate), facts[i].function.c_str(),
                    facts[i].line);
    std::printf("]}\nREADY\n");
    std::fflush(stdout);
    lock.unlock();
    waiter.join();
}
