// SPDX-License-Identifier: Apache-2.0
// Strings read from a target are bytes: paths, function names and IDs need not be UTF-8 and may
// hold control characters. These helpers make them safe to show and lossless in JSON.
#pragma once

#include <string>

namespace pytstates {

// True when s is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool isValidUtf8(const std::string& s);
// s with every ill-formed sequence (each maximal subpart, as Unicode recommends) replaced by U+FFFD.
std::string replaceInvalidUtf8(const std::string& s);
// The bytes as lowercase hex, two digits per byte.
std::string hexBytes(const std::string& s);
// For a terminal: control characters, DEL and bytes that are not UTF-8 as \xNN; the rest as is.
std::string shown(const std::string& s);

}  // namespace pytstates
