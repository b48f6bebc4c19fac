// SPDX-License-Identifier: Apache-2.0
// One pybind11 module, built with each pybind11 release users have today (Debian 12's 2.10.3,
// trixie's 2.13.6, sid's 3.1.x) into modules named by MODULE_NAME. Each reports what it knows
// about its own internals record, registers a class, parks a worker thread inside its own
// gil_scoped_acquire, and (3.x) runs the stale case and a sub-interpreter.
#include <pybind11/eval.h>
#include <pybind11/pybind11.h>
#if defined(PYBIND11_HAS_SUBINTERPRETER_SUPPORT) && PYBIND11_HAS_SUBINTERPRETER_SUPPORT
#include <pybind11/subinterpreter.h>
#define HAVE_SUBINTERPRETERS 1
#endif
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "park.h"

namespace py = pybind11;

namespace {

// The pthread key of this release's internals.tstate: v4 keeps a Py_tss_t*, v5 an inline Py_tss_t,
// 3.x a thread_specific_storage whose only member is the Py_tss_t.
unsigned tstateKey() {
    auto& internals = py::detail::get_internals();
#if PYBIND11_VERSION_MAJOR >= 3
    return reinterpret_cast<Py_tss_t*>(&internals.tstate)->_key;
#elif PYBIND11_INTERNALS_VERSION > 4
    return internals.tstate._key;
#else
    return internals.tstate->_key;
#endif
}

struct Widget {
    int value = 0;
};

using scenario::Handoff;
using scenario::hex;
using scenario::parkUntilReleased;

py::dict park() {
    Handoff handoff;
    long lwp = 0;
    std::string tstate, pthread;
    {
        py::gil_scoped_release releaseForWorker;
        std::thread([&] {
            py::gil_scoped_acquire acquire;  // this release's cache: the thread state it creates
            lwp = syscall(SYS_gettid);
            tstate = hex(PyThreadState_Get());
            pthread = hex(reinterpret_cast<void*>(pthread_self()));
            handoff.signal();
            py::gil_scoped_release parked;
            parkUntilReleased();
        }).detach();
        handoff.wait();
    }
    py::dict facts;
    facts["lwp"] = lwp;
    facts["tstate"] = tstate;
    facts["pthread"] = pthread;
    return facts;
}

#if PYBIND11_VERSION_MAJOR >= 3
// The seed's failure across releases: on a new thread, this 3.x module's gil_scoped_acquire creates
// the thread state T, and inside it another release's module is imported for the first time, so its
// internals are created on this thread and its key caches T. When the acquire ends, 3.x deletes T;
// the other record's key still names it. The thread then parks.
py::dict runStale(const std::string& otherModule) {
    Handoff handoff;
    long lwp = 0;
    std::string deleted, pthread, id;
    unsigned key = 0;
    {
        py::gil_scoped_release releaseForWorker;
        std::thread([&] {
            {
                py::gil_scoped_acquire acquire;
                deleted = hex(PyThreadState_Get());
                py::module_ other = py::module_::import(otherModule.c_str());
                key = other.attr("internals_key")().cast<unsigned>();
                id = other.attr("internals_id").cast<std::string>();
            }  // 3.x deletes the thread state it created
            lwp = syscall(SYS_gettid);
            pthread = hex(reinterpret_cast<void*>(pthread_self()));
            handoff.signal();
            parkUntilReleased();
        }).detach();
        handoff.wait();
    }
    py::dict facts;
    facts["worker_lwp"] = lwp;
    facts["worker_pthread"] = pthread;
    facts["deleted_tstate"] = deleted;
    facts["stale_key"] = key;
    facts["stale_id"] = id;
    return facts;
}
#endif

#ifdef HAVE_SUBINTERPRETERS
// A sub-interpreter made with pybind11's py::subinterpreter (its own GIL), and a worker thread
// parked inside it after running Python there. create() deletes the interpreter's creation thread
// state on 3.13+ (its built-in initial one: the memory is reset, not freed).
py::dict subinterp() {
    static auto* sub = new py::subinterpreter(py::subinterpreter::create());  // lives as long as the process
    Handoff handoff;
    long lwp = 0;
    std::string tstate, interp;
    unsigned key = 0;
    {
        py::gil_scoped_release releaseForWorker;
        std::thread([&] {
            py::subinterpreter_scoped_activate activate(*sub);
            py::exec("import sys\nanswer = sum(range(10))\n");
            lwp = syscall(SYS_gettid);
            tstate = hex(PyThreadState_Get());
            interp = hex(PyInterpreterState_Get());
            key = tstateKey();
            handoff.signal();
            py::gil_scoped_release parked;
            parkUntilReleased();
        }).detach();
        handoff.wait();
    }
    py::dict facts;
    facts["lwp"] = lwp;
    facts["tstate"] = tstate;
    facts["interp"] = interp;
    facts["id"] = sub->id();
    facts["key"] = key;
    return facts;
}

// A second sub-interpreter, created and never entered again: on 3.13+ create() has deleted its
// creation thread state, the interpreter's built-in initial one, so that memory stays reset to
// empty inside the interpreter's state.
py::dict idleSubinterp() {
    static auto* idle = new py::subinterpreter(py::subinterpreter::create());
    PyInterpreterState* interp = PyInterpreterState_Head();
    while (interp && PyInterpreterState_GetID(interp) != idle->id()) interp = PyInterpreterState_Next(interp);
    py::dict facts;
    facts["id"] = idle->id();
    facts["interp"] = hex(interp);
    return facts;
}
#endif

}  // namespace

static void defineModule(py::module_& m) {
    m.attr("internals_id") = PYBIND11_INTERNALS_ID;
    m.attr("version") = std::to_string(PYBIND11_VERSION_MAJOR) + "." + std::to_string(PYBIND11_VERSION_MINOR) + "." +
                        std::to_string(PYBIND11_VERSION_PATCH);
    m.def("internals_key", &tstateKey);
    m.def("internals_address", [] { return hex(&py::detail::get_internals()); });
    py::class_<Widget>(m, "Widget").def(py::init<>()).def_readwrite("value", &Widget::value);
    m.def("park", &park);
    m.def("release", &scenario::releaseParked);
#if PYBIND11_VERSION_MAJOR >= 3
    m.def("module_local_id", [] {
        py::detail::get_local_internals();  // the module-local capsule exists from here on
        return py::detail::get_local_internals_key();
    });
    m.def("run_stale", &runStale);
#endif
#ifdef HAVE_SUBINTERPRETERS
    m.def("subinterp", &subinterp);
    m.def("idle_subinterp", &idleSubinterp);
#endif
}

// A free-threaded Python keeps running without the GIL only for modules that say they can
// (pybind11 2.13+); an older module makes it enable the GIL at import.
#if defined(Py_GIL_DISABLED) && (PYBIND11_VERSION_MAJOR >= 3 || PYBIND11_VERSION_MINOR >= 13)
PYBIND11_MODULE(MODULE_NAME, m, py::mod_gil_not_used()) { defineModule(m); }
#else
PYBIND11_MODULE(MODULE_NAME, m) { defineModule(m); }
#endif
