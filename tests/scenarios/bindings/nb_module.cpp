// SPDX-License-Identifier: Apache-2.0
// A nanobind module beside the pybind11 ones: its internals record (__nb_internals_<abi>_<domain>__
// in the interpreter's state dict), a registered class, and a worker parked inside nanobind's
// gil_scoped_acquire, which is PyGILState_Ensure/Release: nanobind keeps no thread-state cache.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "park.h"

namespace nb = nanobind;

namespace {

struct Gadget {
    int value = 0;
};

nb::dict park() {
    scenario::Handoff handoff;
    long lwp = 0;
    std::string tstate;
    {
        nb::gil_scoped_release releaseForWorker;
        std::thread([&] {
            nb::gil_scoped_acquire acquire;
            lwp = syscall(SYS_gettid);
            tstate = scenario::hex(PyThreadState_Get());
            handoff.signal();
            nb::gil_scoped_release parked;
            scenario::parkUntilReleased();
        }).detach();
        handoff.wait();
    }
    nb::dict facts;
    facts["lwp"] = lwp;
    facts["tstate"] = tstate;
    return facts;
}

}  // namespace

NB_MODULE(MODULE_NAME, m) {
    m.attr("abi_tag") = nb::detail::abi_tag();
    nb::class_<Gadget>(m, "Gadget").def(nb::init<>()).def_rw("value", &Gadget::value);
    m.def("park", &park);
    m.def("release", &scenario::releaseParked);
}
