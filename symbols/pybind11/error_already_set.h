// SPDX-License-Identifier: Apache-2.0
// pybind11::error_already_set (2.10 and later): the Python exception it carries, through its
// shared_ptr to detail::error_fetch_and_normalize { object m_type, m_value, m_trace; std::string
// m_lazy_error_string; bool m_lazy_error_string_completed; ... }.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "symbols/cpython/layout.h"
#include "symbols/memory.h"

namespace pytstates {

struct PythonErrorText {
    std::string type;     // the exception's class, "ValueError"
    std::string message;  // "ValueError: bad value 42" (what() when pybind11 had built it)
};

std::optional<PythonErrorText> readErrorAlreadySet(const Memory& memory, const CPythonLayout& layout, uint64_t object);

}  // namespace pytstates
