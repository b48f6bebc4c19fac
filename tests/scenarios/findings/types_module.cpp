// SPDX-License-Identifier: Apache-2.0
// One source, built twice (types_a with -fabi-version=2, types_b with the default ABI), so each
// build keeps its own pybind11 internals record and registers its classes there.
#include <pybind11/pybind11.h>

#include <string>

namespace shop {
struct Widget {
    int size = 1;
};
struct Gadget {
    std::string name = "g";
};
namespace parts {
struct Bolt {
    double length = 2.5;
};
}  // namespace parts
}  // namespace shop

namespace py = pybind11;

PYBIND11_MODULE(TYPES_MODULE_NAME, m) {
    py::class_<shop::Widget>(m, "Widget").def(py::init<>()).def_readwrite("size", &shop::Widget::size);
    py::class_<shop::Gadget>(m, "Gadget").def(py::init<>()).def_readwrite("name", &shop::Gadget::name);
    py::class_<shop::parts::Bolt>(m, "Bolt").def(py::init<>());
    m.attr("internals_id") = PYBIND11_INTERNALS_ID;
}
