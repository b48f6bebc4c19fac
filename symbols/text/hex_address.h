// SPDX-License-Identifier: Apache-2.0
// An address as the tool writes it everywhere (text, JSON, findings): lowercase 0x-prefixed hex.
// Here, below commands/, so that symbols/ notes and commands/ words spell it the same way.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace pytstates {

inline std::string hexAddress(uint64_t value) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
    return buf;
}

}  // namespace pytstates
