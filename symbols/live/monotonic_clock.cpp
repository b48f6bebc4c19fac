// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/monotonic_clock.h"

#include <time.h>

#include <fstream>
#include <sstream>
#include <string>

namespace pytstates {

namespace {

// The monotonic offset of a process's time namespace, in seconds: 0 without time namespaces
// (kernels before 5.6 have no timens_offsets), nullopt when its file exists but cannot be read.
std::optional<double> monotonicOffset(const std::string& proc) {
    std::ifstream in(proc + "/timens_offsets");
    if (!in) return 0.0;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string clock;
        long long seconds = 0, nanoseconds = 0;
        if (!(words >> clock >> seconds >> nanoseconds)) return std::nullopt;
        if (clock == "monotonic" || clock == "1") return static_cast<double>(seconds) + static_cast<double>(nanoseconds) * 1e-9;
    }
    return 0.0;
}

}  // namespace

std::optional<double> processMonotonicNow(int pid) {
    struct timespec ts {};
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return std::nullopt;
    auto theirs = monotonicOffset("/proc/" + std::to_string(pid));
    auto ours = monotonicOffset("/proc/self");
    if (!theirs || !ours) return std::nullopt;
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9 + (*theirs - *ours);
}

}  // namespace pytstates
