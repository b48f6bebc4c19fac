// SPDX-License-Identifier: Apache-2.0
// Function names as a debugger shows them in a backtrace: C names as they are, C++ names demangled
// and without their parameter list or return type ("pybind11::gil_scoped_acquire::gil_scoped_acquire").
#pragma once

#include <string>

namespace pytstates {

// A symbol or DW_AT_linkage_name; returned unchanged when it is not a mangled C++ name.
std::string functionName(const std::string& symbol);

}  // namespace pytstates
