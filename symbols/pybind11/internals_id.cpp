// SPDX-License-Identifier: Apache-2.0
#include "symbols/pybind11/internals_id.h"

#include <regex>

namespace pytstates {

bool parseInternalsId(const std::string& raw, InternalsId* out) {
    static const std::regex form(R"(^__pybind11_(internals|module_local)_v(\d+)(.*)__(\d*)$)");
    std::smatch m;
    if (!std::regex_match(raw, m, form)) return false;
    InternalsId id;
    id.raw = raw;
    id.moduleLocal = m[1] == "module_local";
    id.version = std::stoi(m[2]);
    std::string tail = m[3];
    static const std::regex v3(R"(^_(system|[a-z]+)_(libstdcpp|libcpp|msvcstl|[a-z]+)_(gxx_abi_\w+?_use_cxx11_abi_\d|\w+?)(_debug)?$)");
    static const std::regex v2(R"(^(_without_thread)?(_msvc|_icc|_clang|_pgi|_mingw|_gcc_cygwin|_gcc|_unknown)?(_libstdcpp|_libcpp)?(_cxxabi\d+|_mscver\d+)?(_debug)?$)");
    if (std::regex_match(tail, m, v3) && tail.find("_abi_") != std::string::npos) {
        id.compiler = m[1];
        id.stdlib = m[2];
        id.abi = m[3];
        id.buildType = m[4].matched ? "debug" : "";
    } else if (std::regex_match(tail, m, v2)) {
        id.compiler = m[2].matched ? m[2].str().substr(1) : "";
        id.stdlib = m[3].matched ? m[3].str().substr(1) : "";
        id.abi = m[4].matched ? m[4].str().substr(1) : "";
        id.buildType = m[5].matched ? "debug" : "";
    } else {
        id.rest = tail;
    }
    *out = id;
    return true;
}

std::string describeAbi(const std::string& abi) {
    static const std::regex cxxabi(R"(^cxxabi(\d+)$)");
    std::smatch m;
    if (std::regex_match(abi, m, cxxabi)) {
        int v = std::stoi(m[1]);
        std::string who;
        switch (v) {
            case 1002: who = "GCC <= 4.9, any clang, or -fabi-version=2"; break;
            case 1008: who = "GCC 5.1"; break;
            case 1009: who = "GCC 5.2-5.x"; break;
            case 1010: who = "GCC 6"; break;
            case 1011: who = "GCC 7, or -fabi-version=11 (PyTorch's pinned value)"; break;
            case 1012: who = "GCC 8.1"; break;
            case 1013: who = "GCC 8.2-9"; break;
            case 1014: who = "GCC 10"; break;
            case 1015: who = "GCC 10/11"; break;
            case 1016: who = "GCC 11"; break;
            case 1017: who = "GCC 12"; break;
            case 1018: who = "GCC 13"; break;
            case 1019: who = "GCC 14"; break;
            default: who = "C++ ABI version " + std::to_string(v - 1000); break;
        }
        return abi + " (" + who + ")";
    }
    return abi;
}

std::string releasesOfInternalsVersion(int version) {
    switch (version) {
        case 1: return "pybind11 2.2.0-2.2.3";
        case 2: return "pybind11 2.2.4";
        case 3: return "pybind11 2.3-2.4";
        case 4: return "pybind11 2.5-2.10, or 2.11-2.13 on Python < 3.12";
        case 5: return "pybind11 2.11-2.13 on Python >= 3.12, or 2.8+ built with internals v5";
        case 6: case 7: case 8: return "a pybind11 development snapshot before 3.0";
        case 9: case 10: return "a pybind11 3.0 release candidate";
        case 11: return "pybind11 3.0.x";
        case 12: return "pybind11 3.1.x";
        default: return "pybind11 with internals version " + std::to_string(version);
    }
}

std::string describeIdDifference(const InternalsId& a, const InternalsId& b) {
    std::string d;
    auto add = [&](const std::string& what) { d += (d.empty() ? "" : "; ") + what; };
    if (a.version != b.version) add("internals version " + std::to_string(a.version) + " vs " + std::to_string(b.version) + " (different pybind11 releases)");
    if (a.compiler != b.compiler) add("compiler " + a.compiler + " vs " + b.compiler);
    if (a.stdlib != b.stdlib) add("C++ standard library " + a.stdlib + " vs " + b.stdlib);
    if (a.abi != b.abi) add("C++ ABI " + describeAbi(a.abi) + " vs " + describeAbi(b.abi));
    if (a.buildType != b.buildType) add("build type '" + a.buildType + "' vs '" + b.buildType + "'");
    if (d.empty()) add("IDs differ: " + a.raw + " vs " + b.raw);
    return d;
}

}  // namespace pytstates
