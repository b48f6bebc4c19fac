// SPDX-License-Identifier: Apache-2.0
// The one line that says why no CPython runtime was found in a target, and what would help.
#pragma once

#include <string>
#include <vector>

#include "symbols/target.h"

namespace pytstates {

struct NoRuntime {
    std::string why;
    // No loaded module looks like CPython and every module's file was read: the process does not
    // run CPython (a core of it is still worth its crash and native stacks). Otherwise something
    // kept pytstates from finding the runtime that is there.
    bool notPython = false;
    // A truncated core: what it holds is reported (its crash, threads, native stacks), the missing
    // part being the likelier cause.
    bool truncated = false;
};

// `rejected`: the candidates that did not validate, each with why (RuntimeSearch::rejected).
// A truncated core says so first: the missing memory is the likelier cause.
NoRuntime explainNoRuntime(const Target& target, const std::vector<std::string>& rejected);

}  // namespace pytstates
