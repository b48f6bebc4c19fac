// SPDX-License-Identifier: Apache-2.0
#include "symbols/progress.h"

#include <chrono>

namespace pytstates {

namespace {

ProgressSink& sink() {
    static ProgressSink s;
    return s;
}
std::chrono::steady_clock::time_point lastTold;

}  // namespace

void setProgressSink(ProgressSink s) { sink() = std::move(s); }

bool progressWanted() { return static_cast<bool>(sink()); }

void tellProgress(const std::string& line) {
    if (!sink()) return;
    auto now = std::chrono::steady_clock::now();
    if (now - lastTold < std::chrono::milliseconds(100)) return;
    lastTold = now;
    sink()(line);
}

}  // namespace pytstates
