// SPDX-License-Identifier: Apache-2.0
#include "commands/render/text_encoding.h"

#include <algorithm>
#include <cstdint>

namespace pytstates {

namespace {

struct Lead {
    size_t length = 0;          // 0: not a lead byte
    uint8_t low = 0x80, high = 0xbf;  // the range of the second byte
};

// Unicode's table 3-7: the sequence length a lead byte starts, and its second byte's range.
Lead leadOf(uint8_t b) {
    Lead l;
    if (b < 0x80) l.length = 1;
    else if (b >= 0xc2 && b <= 0xdf) l.length = 2;
    else if (b >= 0xe0 && b <= 0xef) l.length = 3;
    else if (b >= 0xf0 && b <= 0xf4) l.length = 4;
    if (b == 0xe0) l.low = 0xa0;
    if (b == 0xed) l.high = 0x9f;  // no surrogates
    if (b == 0xf0) l.low = 0x90;
    if (b == 0xf4) l.high = 0x8f;  // nothing above U+10FFFF
    return l;
}

// How many bytes at s[i] follow the rules for a sequence: the whole sequence when it is
// well-formed (*complete), else its maximal subpart (at least 1 byte), which U+FFFD replaces.
size_t scan(const std::string& s, size_t i, bool* complete) {
    auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    Lead lead = leadOf(byte(i));
    *complete = lead.length == 1;
    if (lead.length <= 1) return 1;
    size_t k = 1;
    if (i + 1 < s.size() && byte(i + 1) >= lead.low && byte(i + 1) <= lead.high) {
        k = 2;
        while (k < lead.length && i + k < s.size() && (byte(i + k) & 0xc0) == 0x80) ++k;
    }
    *complete = k == lead.length;
    return k;
}

// The code point of the well-formed sequence of n bytes at s[i].
uint32_t codePointAt(const std::string& s, size_t i, size_t n) {
    static const uint8_t leadMask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    uint32_t cp = static_cast<uint8_t>(s[i]) & leadMask[n];
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3f);
    return cp;
}

}  // namespace

bool isHiddenControl(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

bool isValidUtf8(const std::string& s) {
    bool complete = true;
    for (size_t i = 0; i < s.size() && complete;) i += scan(s, i, &complete);
    return complete;
}

std::string replaceInvalidUtf8(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        bool complete;
        size_t n = scan(s, i, &complete);
        if (complete) out.append(s, i, n);
        else out += "\xef\xbf\xbd";
        i += n;
    }
    return out;
}

std::string hexBytes(const std::string& s) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() * 2);
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::string shown(const std::string& s) {
    // Printable ASCII, by far the most common (every function and path of a --native stack), as is.
    if (std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 0x20 && ch < 0x7f; })) return s;
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        bool complete;
        size_t n = scan(s, i, &complete);
        auto c = static_cast<unsigned char>(s[i]);
        if (complete && n > 1 && isHiddenControl(codePointAt(s, i, n))) {
            uint32_t cp = codePointAt(s, i, n);
            out += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4) out += digits[(cp >> shift) & 15];
            i += n;
            continue;
        }
        if (complete && (n > 1 || (c >= 0x20 && c != 0x7f))) {
            out.append(s, i, n);
            i += n;
            continue;
        }
        out += "\\x";
        out += digits[c >> 4];
        out += digits[c & 15];
        ++i;
    }
    return out;
}

}  // namespace pytstates
