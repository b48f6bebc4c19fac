// SPDX-License-Identifier: Apache-2.0
// The one line that says why no CPython runtime was found in a target, and what would help.
#pragma once

#include <string>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

// `rejected`: the candidates that did not validate, each with why (RuntimeSearch::rejected).
std::string explainNoRuntime(const Target& target, const std::vector<std::string>& rejected);

}  // namespace pytstates
