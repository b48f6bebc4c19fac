// SPDX-License-Identifier: Apache-2.0
#include "commands/render/text_layout.h"

#include <algorithm>
#include <sstream>

namespace pytstates {

std::string plural(size_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

namespace {

// Where the escape starting at i ends (one past its final letter), or i when none starts there.
size_t escapeEnd(const std::string& s, size_t i) {
    if (s[i] != '\x1b' || i + 1 >= s.size() || s[i + 1] != '[') return i;
    size_t j = i + 2;
    while (j < s.size() && !(s[j] >= '@' && s[j] <= '~')) ++j;
    return j < s.size() ? j + 1 : j;
}

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The byte index at which `columns` columns of s (from `from`) end.
size_t indexAfterColumns(const std::string& s, size_t from, size_t columns) {
    size_t i = from, seen = 0;
    while (i < s.size()) {
        size_t e = escapeEnd(s, i);
        if (e != i) {
            i = e;
            continue;
        }
        if (!continuation(s[i])) {
            if (seen == columns) return i;
            ++seen;
        }
        ++i;
    }
    return i;
}

// A folded line's continuation indent: past the line's own, but leaving most of the width for text.
size_t continuationIndent(const std::string& line, size_t width) {
    size_t lead = line.find_first_not_of(' ');
    if (lead == std::string::npos) lead = 0;
    return std::min(lead + 4, width / 2);
}

void foldLine(const std::string& line, size_t width, std::string& out) {
    std::string indent(continuationIndent(line, width), ' ');
    std::string rest = line;
    std::string prefix;
    while (displayWidth(prefix + rest) > width) {
        size_t room = width - prefix.size();
        size_t cut = indexAfterColumns(rest, 0, room);  // first byte past the room
        size_t space = rest.rfind(' ', cut);
        // Break at the last space that leaves some text on the line; a word wider than the room
        // is cut inside.
        size_t textStart = rest.find_first_not_of(' ');
        size_t at = space != std::string::npos && space > textStart && space <= cut ? space : cut;
        std::string head = rest.substr(0, at);
        while (!head.empty() && head.back() == ' ') head.pop_back();
        out += prefix + head + "\n";
        size_t next = rest.find_first_not_of(' ', at);
        rest = next == std::string::npos ? std::string() : rest.substr(next);
        prefix = indent;
        if (rest.empty()) return;
    }
    out += prefix + rest + "\n";
}

}  // namespace

size_t displayWidth(const std::string& line) {
    size_t n = 0;
    for (size_t i = 0; i < line.size();) {
        size_t e = escapeEnd(line, i);
        if (e != i) {
            i = e;
            continue;
        }
        if (!continuation(line[i])) ++n;
        ++i;
    }
    return n;
}

std::string wrapText(const std::string& text, size_t width, const std::string& indent) {
    std::string out, line;
    std::istringstream words(text);
    std::string word;
    size_t room = width > indent.size() + 20 ? width - indent.size() : 20;  // a paragraph keeps 20 columns at least
    while (words >> word) {
        if (width && !line.empty() && displayWidth(line) + 1 + displayWidth(word) > room) {
            out += indent + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) out += indent + line + "\n";
    return out;
}

std::string foldLines(const std::string& text, size_t width) {
    if (!width) return text;
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        bool newline = end != std::string::npos;
        std::string line = text.substr(start, newline ? end - start : std::string::npos);
        while (!line.empty() && line.back() == ' ') line.pop_back();  // a table's padding
        if (displayWidth(line) <= width) out += line + "\n";
        else foldLine(line, width, out);
        if (!newline) {
            out.pop_back();  // the text's last line had no newline
            break;
        }
        start = end + 1;
    }
    return out;
}

std::string fitPath(const std::string& path, size_t room) {
    if (!room || displayWidth(path) <= room) return path;
    size_t name = path.rfind('/');
    if (name == std::string::npos || name == 0) return path;  // a bare name, or one under /
    static const std::string kCut = "\xe2\x80\xa6/";         // "…/": 2 columns
    // From the file name outwards, a directory more each time while "…/" and the tail still fit.
    size_t start = name + 1;
    while (start > 1) {
        size_t slash = path.rfind('/', start - 2);
        if (slash == std::string::npos || slash == 0) break;  // the whole path fits no better
        if (2 + displayWidth(path.substr(slash + 1)) > room) break;
        start = slash + 1;
    }
    return kCut + path.substr(start);
}

std::string lineWithPath(const std::string& before, const std::string& path, const std::string& after, size_t width) {
    if (!width) return before + path + after;
    size_t used = displayWidth(before) + displayWidth(after);
    size_t name = path.rfind('/');
    size_t shortest = name == std::string::npos ? displayWidth(path) : 2 + displayWidth(path.substr(name + 1));
    if (used + shortest <= width) return before + fitPath(path, width - used) + after;
    // No cut makes the line fit: foldLines breaks it at the space before the path's word, which
    // then opens a continuation line: the path fits that line's room, whole where it can.
    size_t space = before.rfind(' ');
    std::string opens = space == std::string::npos ? before : before.substr(space + 1);
    std::string closes = after.substr(0, after.find(' '));
    size_t taken = continuationIndent(before, width) + displayWidth(opens) + displayWidth(closes);
    return before + fitPath(path, width > taken ? width - taken : 1) + after;
}

std::string paint(const std::string& word, Paint how, bool color) {
    if (!color) return word;
    const char* code = "";
    switch (how) {
        case Paint::Crash: code = "\x1b[1;31m"; break;
        case Paint::Hang: code = "\x1b[1;35m"; break;
        case Paint::Error: code = "\x1b[31m"; break;
        case Paint::Warning: code = "\x1b[33m"; break;
    }
    return code + word + "\x1b[0m";
}

}  // namespace pytstates
