// SPDX-License-Identifier: Apache-2.0
// The "torch" of the seed's story: an extension module with its own copy of pybind11, built
// with the compiler's default C++ ABI (cxxabi1017 on GCC 12), so it keeps its own internals
// record and its own thread-state TLS key. work() releases and re-acquires the GIL the way a
// torch op does (nested gil_scoped_release / gil_scoped_acquire).
#include <pybind11/pybind11.h>

#include "internals_key.h"

namespace py = pybind11;

namespace {

int work(int n) {
    py::gil_scoped_release release;
    {
        py::gil_scoped_acquire acquire;
        n += 1;
    }
    return n;
}

// An op that takes the GIL without first releasing it: the caller holds it already, with its own
// thread state; pybind11's acquire then runs the state its own key cached, if that differs.
int workHeld(int n) {
    py::gil_scoped_acquire acquire;
    return n + 1;
}

unsigned internalsKey() {
    return PyThread_tss_is_created(internalsTstateTss()) ? internalsTstateKey() : ~0u;
}

}  // namespace

PYBIND11_MODULE(seed_module, m) {
    m.def("work", &work);
    m.def("work_held", &workHeld);
    m.def("internals_key", &internalsKey);
    m.attr("internals_id") = PYBIND11_INTERNALS_ID;
}
