// SPDX-License-Identifier: Apache-2.0
// The address an argument of `pyt tstate` names: a number, or an expression lldb evaluates in the
// selected frame (a variable path such as `tstate` or `tstate->interp` first, which needs no
// code run in the target; then lldb's expression evaluator, for `$rdi`, casts and arithmetic).
#pragma once

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <optional>
#include <string>

namespace pytstates::lldbfront {

std::optional<uint64_t> parseNumber(const std::string& text);

// A pointer's or integer's value, or a struct's address; nullopt and *why when lldb cannot.
std::optional<uint64_t> addressOf(lldb::SBTarget target, lldb::SBFrame frame, const std::string& expression, std::string* why);

}  // namespace pytstates::lldbfront
