// SPDX-License-Identifier: Apache-2.0
// The debugger view (plugin/engine/pytstates.h, pytstates_view_*): one stop of a debugger's
// target analysed once, and each question a debugger command asks of it ({"ask": "stack", ...},
// JSON) tied to its facts (commands/analysis/debugger_view) and its words (commands/render/
// render_view). Never throws.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

class DebuggerView;

class ViewSession {
public:
    // args as pytstates_view_open takes them ("--no-dwarf"); source files are read under the
    // target's sysroot first.
    // Returns null and *error (one line) when the target holds no CPython or an argument is bad.
    static std::unique_ptr<ViewSession> open(std::shared_ptr<const Target> target, const std::vector<std::string>& args,
                                             std::string* error);
    ~ViewSession();

    // 0 and *answer (one JSON object), or 2 and *error (one line).
    int ask(const std::string& question, std::string* answer, std::string* error);

private:
    ViewSession() = default;
    std::shared_ptr<const Target> target_;
    std::unique_ptr<DebuggerView> view_;
};

}  // namespace pytstates
