// SPDX-License-Identifier: Apache-2.0
// The lines of /proc/PID/maps, read once here for every use: a live target's mapped files and its
// readable ranges, and where libelf mapped pytstates' own decompressed debug files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pytstates {

struct MapsLine {
    uint64_t start = 0, end = 0, offset = 0;
    bool readable = false;      // 'r' in its permissions
    unsigned major = 0, minor = 0;
    uint64_t inode = 0;
    std::string path;           // as the kernel prints it (" (deleted)" kept); empty when anonymous
};

// The lines of the file's text, in its order (by address); a line that does not parse is left out.
std::vector<MapsLine> parseMaps(const std::string& text);

}  // namespace pytstates
