// SPDX-License-Identifier: Apache-2.0
// The C++ exception a thread threw and nobody caught, from memory alone (no libstdc++ DWARF): the
// Itanium ABI puts a __cxa_exception header right before every thrown object, ending in the
// _Unwind_Exception whose exception_class is "GNUCC++\0"; a pointer to it (or to the object) stays
// on the stack of the thread that std::terminate runs on. The header's exceptionType is the
// std::type_info of the object's type; its name demangles to the C++ type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

struct ThrownException {
    uint64_t object = 0;               // the thrown object
    uint64_t typeInfo = 0;             // its std::type_info
    std::string type;                  // "std::runtime_error"
    std::vector<std::string> bases;    // single-inheritance bases, nearest first, as far as they are told
    std::string message;               // what() for the std:: exceptions that keep a string; empty otherwise
};

// Searches the words of the thread's stack above its sp (at most maxBytes).
std::optional<ThrownException> findThrownException(const Target& target, const OsThread& thread, size_t maxBytes = 16384);

}  // namespace pytstates
