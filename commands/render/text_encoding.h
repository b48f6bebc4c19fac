// SPDX-License-Identifier: Apache-2.0
// Strings read from a target are bytes: paths, function names and IDs need not be UTF-8 and may
// hold control characters. These helpers make them safe to show and lossless in JSON.
#pragma once

#include <cstdint>
#include <string>

namespace pytstates {

// True when s is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool isValidUtf8(const std::string& s);
// s with every ill-formed sequence (each maximal subpart, as Unicode recommends) replaced by U+FFFD.
std::string replaceInvalidUtf8(const std::string& s);
// The bytes as lowercase hex, two digits per byte.
std::string hexBytes(const std::string& s);
// Characters a terminal obeys rather than shows: C1 controls (U+0080-U+009F: U+009B is a CSI in
// many terminals) and the bidirectional marks, embeddings, overrides and isolates (U+061C,
// U+200E-200F, U+202A-202E, U+2066-2069), which reorder what follows them on the line.
bool isHiddenControl(uint32_t codePoint);
// For a terminal: control characters, DEL and bytes that are not UTF-8 as \xNN, the characters
// isHiddenControl names as \uNNNN; the rest as is.
std::string shown(const std::string& s);

}  // namespace pytstates
