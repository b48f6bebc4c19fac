// SPDX-License-Identifier: Apache-2.0
// The last component of a path ("libpython3.11.so.1.0" of "/usr/lib/.../libpython3.11.so.1.0"):
// modules are told and matched by their file name, wherever they were loaded from.
#pragma once

#include <string>

namespace pytstates {

inline std::string baseName(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace pytstates
