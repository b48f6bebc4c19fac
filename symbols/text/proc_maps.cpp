// SPDX-License-Identifier: Apache-2.0
#include "symbols/text/proc_maps.h"

#include <cstdlib>

namespace pytstates {

namespace {

// A number in `base` at p, then one separator `sep` (0: none); false when either is missing.
bool field(const char*& p, int base, char sep, uint64_t* value) {
    char* end = nullptr;
    *value = std::strtoull(p, &end, base);
    if (end == p || (sep && *end != sep)) return false;
    p = sep ? end + 1 : end;
    return true;
}

}  // namespace

std::vector<MapsLine> parseMaps(const std::string& text) {
    std::vector<MapsLine> out;
    // "START-END PERMS OFFSET MAJOR:MINOR INODE   PATH"
    for (size_t at = 0; at < text.size();) {
        size_t eol = text.find('\n', at);
        if (eol == std::string::npos) eol = text.size();
        std::string line = text.substr(at, eol - at);
        at = eol + 1;
        const char* p = line.c_str();
        MapsLine m;
        uint64_t major = 0, minor = 0;
        if (!field(p, 16, '-', &m.start) || !field(p, 16, ' ', &m.end)) continue;
        if (line.size() < static_cast<size_t>(p - line.c_str()) + 5 || p[4] != ' ') continue;
        m.readable = p[0] == 'r';
        p += 5;
        if (!field(p, 16, ' ', &m.offset) || !field(p, 16, ':', &major) || !field(p, 16, ' ', &minor) || !field(p, 10, 0, &m.inode))
            continue;
        m.major = static_cast<unsigned>(major);
        m.minor = static_cast<unsigned>(minor);
        while (*p == ' ') ++p;
        m.path = p;
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace pytstates
