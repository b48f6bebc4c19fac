// SPDX-License-Identifier: Apache-2.0
// A JSON writer that appends to a string as it goes, with the bytes nlohmann's dump(2) gives for
// the same value: two-space indents, "{}"/"[]" when empty, its escapes (plus \uxxxx for the C1
// controls and bidirectional formatting characters, text_encoding.h). No tree is built (the
// tree and its serializer were a third of a 1,000-thread `check --json`), so the caller gives each
// object's keys in ascending byte order, as nlohmann's std::map holds them.
// Strings from the target need not be UTF-8: a string member is written with U+FFFD in place of
// each ill-formed sequence and followed by "<key>_bytes" with its exact bytes in hex (for an array
// of strings: an array with the hex of each string that needed it, null for the others).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace pytstates {

class JsonWriter {
public:
    explicit JsonWriter(std::string& out) : out_(out) {}

    void beginObject() { open('{'); }
    void endObject() { close('}'); }
    void beginArray() { open('['); }
    void endArray() { close(']'); }
    // The next member's key (inside an object); its value follows.
    void key(std::string_view k);

    void null() { element(); out_ += "null"; }
    void boolean(bool b) { element(); out_ += b ? "true" : "false"; }
    void number(int64_t v);
    void number(uint64_t v);
    void number(double v);
    // A string as it is (the caller knows it is UTF-8, or it is an array element).
    void string(std::string_view s);

    // Members: a value of any of the kinds below under `k`.
    template <typename T>
    void field(std::string_view k, const T& v) {
        key(k);
        value(v);
        if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::vector<std::string>>) companion(k, v);
    }
    void field(std::string_view k, const char* v) { field(k, std::string(v)); }
    // A member that is null when `present` is false.
    template <typename T>
    void fieldOrNull(std::string_view k, bool present, const T& v) {
        if (present) field(k, v);
        else { key(k); null(); }
    }

    void value(const std::string& s);
    void value(const char* s) { value(std::string(s)); }
    void value(bool b) { boolean(b); }
    void value(std::nullptr_t) { null(); }
    void value(double v) { number(v); }
    template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
    void value(T v) {
        if constexpr (std::is_signed_v<T>) number(static_cast<int64_t>(v));
        else number(static_cast<uint64_t>(v));
    }
    template <typename T>
    void value(const std::optional<T>& v) {
        if (v) value(*v);
        else null();
    }
    template <typename T>
    void value(const std::vector<T>& v) {
        beginArray();
        for (const auto& e : v) value(e);
        endArray();
    }
    template <typename T>
    void value(const std::map<std::string, T>& m) {
        beginObject();
        for (const auto& [k, v] : m) field(k, v);
        endObject();
    }

private:
    void open(char c);
    void close(char c);
    void element();  // before a value: the separator and indent an array element needs
    void companion(std::string_view k, const std::string& s);
    void companion(std::string_view k, const std::vector<std::string>& v);
    void indent(size_t depth);
    void quoted(std::string_view s);  // escaped, in quotes

    std::string& out_;
    std::vector<bool> empty_;  // per open container: nothing written in it yet
    bool afterKey_ = false;    // a key was written: the value goes on its line
};

}  // namespace pytstates
