// SPDX-License-Identifier: Apache-2.0
// One analysed view of the process lldb has stopped (pytstates_view), kept while the stop lasts:
// keyed by the process's unique id and its stop id (SBProcess::GetStopID, which a continue, a
// step or an expression that runs code moves on), so that every pyt command and every summary of
// one stop asks the same analysis, and the next stop gets a new one.
#pragma once

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace pytstates::lldbfront {

struct LldbTarget;

// The view's answer to one question, or why there is none (one line).
struct Answer {
    nlohmann::json json;
    std::string error;
    bool ok() const { return error.empty(); }
    std::string text() const;  // its "text" ("" when none)
};

// Asks the view of process's current stop, opening it first when the stop is new.
Answer askView(lldb::SBProcess process, const nlohmann::json& question);

// Drops the view (the plugin's commands that change memory or the process).
void dropView();

}  // namespace pytstates::lldbfront
