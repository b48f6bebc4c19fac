// SPDX-License-Identifier: Apache-2.0
#include "commands/json_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

#include "commands/text_encoding.h"

namespace pytstates {

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

// nlohmann's escapes for UTF-8 text: the short ones, \u00xx (lowercase) for other controls.
void JsonWriter::string(std::string_view s) {
    element();
    quoted(s);
}

void JsonWriter::quoted(std::string_view s) {
    out_ += '"';
    size_t run = 0;  // start of the bytes not yet copied
    for (size_t i = 0; i < s.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
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
                static const char digits[] = "0123456789abcdef";
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
