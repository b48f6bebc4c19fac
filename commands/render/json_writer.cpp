// SPDX-License-Identifier: Apache-2.0
#include "commands/render/json_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

#include "commands/render/text_encoding.h"

namespace pytstates {

namespace {

// The length of the C1 control or bidirectional formatting character (isHiddenControl) that
// starts at s[i], 0 when none does; its code point in *cp.
size_t hiddenControlAt(std::string_view s, size_t i, uint32_t* cp) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    size_t n = byte(i) == 0xe2 ? 3 : 2;
    if (i + n > s.size()) return 0;
    uint32_t v = byte(i) & (n == 3 ? 0x0f : 0x1f);
    for (size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xc0) != 0x80) return 0;
        v = (v << 6) | (byte(i + k) & 0x3f);
    }
    *cp = v;
    return isHiddenControl(v) ? n : 0;
}

}  // namespace

void JsonWriter::indent(size_t depth) { out_.append(2 * depth, ' '); }

void JsonWriter::element() {
    if (afterKey_) {
        afterKey_ = false;
        return;
    }
    if (empty_.empty()) return;  // the top-level value
    out_ += empty_.back() ? "\n" : ",\n";
    empty_.back() = false;
    indent(empty_.size());
}

void JsonWriter::key(std::string_view k) {
    element();
    quoted(k);
    out_ += ": ";
    afterKey_ = true;
}

void JsonWriter::open(char c) {
    element();
    out_ += c;
    empty_.push_back(true);
}

void JsonWriter::close(char c) {
    bool wasEmpty = empty_.back();
    empty_.pop_back();
    if (!wasEmpty) {
        out_ += '\n';
        indent(empty_.size());
    }
    out_ += c;
}

void JsonWriter::number(int64_t v) {
    element();
    char buf[24];
    out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

void JsonWriter::number(uint64_t v) {
    element();
    char buf[24];
    out_.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// Doubles are few (stopped_ms, history's ms): nlohmann's own shortest form for them.
void JsonWriter::number(double v) {
    element();
    out_ += nlohmann::json(v).dump();
}

// nlohmann's escapes for UTF-8 text: the short ones, \u00xx (lowercase) for other controls; and
// \uxxxx for the C1 controls and bidirectional formatting characters, which nlohmann writes as
// they are: JSON shown on a terminal must not drive it or reorder the line.
void JsonWriter::string(std::string_view s) {
    element();
    quoted(s);
}

void JsonWriter::quoted(std::string_view s) {
    out_ += '"';
    size_t run = 0;  // start of the bytes not yet copied
    for (size_t i = 0; i < s.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0xc2 && c != 0xd8 && c != 0xe2) continue;
        static const char digits[] = "0123456789abcdef";
        if (c >= 0x80) {  // a lead byte of one of the hidden controls
            uint32_t cp = 0;
            size_t n = hiddenControlAt(s, i, &cp);
            if (!n) continue;
            out_.append(s.data() + run, i - run);
            out_ += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4) out_ += digits[(cp >> shift) & 15];
            i += n - 1;
            run = i + 1;
            continue;
        }
        out_.append(s.data() + run, i - run);
        run = i + 1;
        switch (c) {
            case '"': out_ += "\\\""; break;
            case '\\': out_ += "\\\\"; break;
            case '\b': out_ += "\\b"; break;
            case '\f': out_ += "\\f"; break;
            case '\n': out_ += "\\n"; break;
            case '\r': out_ += "\\r"; break;
            case '\t': out_ += "\\t"; break;
            default: {
                out_ += "\\u00";
                out_ += digits[c >> 4];
                out_ += digits[c & 15];
            }
        }
    }
    out_.append(s.data() + run, s.size() - run);
    out_ += '"';
}

void JsonWriter::value(const std::string& s) {
    if (isValidUtf8(s)) string(s);
    else string(replaceInvalidUtf8(s));
}

void JsonWriter::companion(std::string_view k, const std::string& s) {
    if (isValidUtf8(s)) return;
    key(std::string(k) + "_bytes");
    string(hexBytes(s));
}

void JsonWriter::companion(std::string_view k, const std::vector<std::string>& v) {
    auto valid = [](const std::string& s) { return isValidUtf8(s); };
    if (std::all_of(v.begin(), v.end(), valid)) return;
    key(std::string(k) + "_bytes");
    beginArray();
    for (const auto& s : v) {
        if (valid(s)) null();
        else string(hexBytes(s));
    }
    endArray();
}

}  // namespace pytstates
