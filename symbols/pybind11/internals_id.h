// SPDX-License-Identifier: Apache-2.0
// PYBIND11_INTERNALS_ID strings: what each piece says about the module that made it.
#pragma once

#include <string>

namespace pytstates {

struct InternalsId {
    std::string raw;
    bool moduleLocal = false;  // __pybind11_module_local_v...
    int version = 0;           // PYBIND11_INTERNALS_VERSION
    std::string compiler;      // "gcc", "clang", "msvc", ... (2.x); "system" (3.x)
    std::string stdlib;        // "libstdcpp", "libcpp"
    std::string abi;           // "cxxabi1002" (2.x) or "gxx_abi_1xxx_use_cxx11_abi_1" (3.x)
    std::string buildType;     // "debug" or empty
    std::string rest;          // anything not understood
};

// False when the string is not a pybind11 internals or module-local ID.
bool parseInternalsId(const std::string& raw, InternalsId* out);

// "GCC 12 (default ABI)" style words for an abi piece, for messages.
std::string describeAbi(const std::string& abi);

// What differs between two IDs, in words a user can act on.
std::string describeIdDifference(const InternalsId& a, const InternalsId& b);

// The pybind11 releases that make records of an internals version on x86_64 Linux ("pybind11
// 3.1.x"); shared/research/pybind11-internals.md section 1.
std::string releasesOfInternalsVersion(int version);

}  // namespace pytstates
