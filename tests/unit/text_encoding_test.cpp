// SPDX-License-Identifier: Apache-2.0
// Strings from the target shown safely: in text, C0 controls, DEL and bytes that are not UTF-8 as
// \xNN, and the characters a terminal obeys rather than shows (C1 controls: U+009B is a CSI;
// bidirectional marks, embeddings, overrides and isolates, which reorder the line) as \uNNNN; in
// JSON, the same characters as \u escapes that decode to the very same string.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>

#include "commands/render/json_writer.h"
#include "commands/render/text_encoding.h"

namespace pytstates {
namespace {

// U+XXXX in UTF-8.
std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xc0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        s += static_cast<char>(0xe0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return s;
}

std::string jsonOf(const std::string& s) {
    std::string out;
    JsonWriter w(out);
    w.beginObject();
    w.field("name", s);
    w.endObject();
    return out;
}

TEST(TextEncodingTest, C0AndInvalidBytesAsHex) {
    EXPECT_EQ(shown("plain ascii"), "plain ascii");
    EXPECT_EQ(shown(std::string("a\x1b[31mb\x7f", 8)), "a\\x1b[31mb\\x7f");
    EXPECT_EQ(shown("caf\xe9"), "caf\\xe9");        // Latin-1, not UTF-8
    EXPECT_EQ(shown("\x9b" "2J"), "\\x9b2J");        // a raw C1 byte is no UTF-8
}

TEST(TextEncodingTest, C1ControlsAndBidiEscaped) {
    // Every C1 control (U+0080-U+009F), as UTF-8.
    for (uint32_t cp = 0x80; cp <= 0x9f; ++cp) {
        char want[8];
        std::snprintf(want, sizeof want, "\\u%04x", cp);
        EXPECT_EQ(shown("x" + utf8(cp) + "y"), std::string("x") + want + "y") << cp;
        EXPECT_TRUE(isHiddenControl(cp));
    }
    // U+009B is a CSI: "\u009b2J" would clear the screen.
    EXPECT_EQ(shown(utf8(0x9b) + "2J"), "\\u009b2J");
    EXPECT_EQ(shown("evil" + utf8(0x202e) + "txt.exe"), "evil\\u202etxt.exe");
    for (uint32_t cp : {0x061cu, 0x200eu, 0x200fu, 0x202au, 0x202bu, 0x202cu, 0x202du, 0x202eu, 0x2066u, 0x2067u, 0x2068u, 0x2069u}) {
        char want[8];
        std::snprintf(want, sizeof want, "\\u%04x", cp);
        EXPECT_EQ(shown(utf8(cp)), want) << cp;
    }
    // Their neighbours are text: shown as they are.
    for (uint32_t cp : {0xa0u, 0xe9u, 0x061bu, 0x061du, 0x200du, 0x2010u, 0x2029u, 0x202fu, 0x2065u, 0x206au, 0x4e2du}) {
        EXPECT_FALSE(isHiddenControl(cp)) << cp;
        EXPECT_EQ(shown(utf8(cp)), utf8(cp)) << cp;
    }
    // Idempotent: what shown() gives is shown as it is.
    std::string once = shown(utf8(0x85) + "\x1b" + utf8(0x2066) + "\xff");
    EXPECT_EQ(shown(once), once);
}

TEST(TextEncodingTest, JsonEscapesTheSameCharacters) {
    std::string name = "co" + utf8(0x9b) + "2J" + utf8(0x202e) + "gpj.exe" + utf8(0x85) + utf8(0x2069) + utf8(0x061c) + "\xc3\xa9";
    std::string out = jsonOf(name);
    EXPECT_NE(out.find("co\\u009b2J\\u202egpj.exe\\u0085\\u2069\\u061c\xc3\xa9"), std::string::npos) << out;
    for (uint32_t cp : {0x85u, 0x9bu, 0x202eu, 0x2069u, 0x061cu}) EXPECT_EQ(out.find(utf8(cp)), std::string::npos) << cp;
    // Lossless: the JSON decodes to the same string, and it is UTF-8, so no "_bytes" companion.
    auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["name"].get<std::string>(), name);
    EXPECT_FALSE(j.contains("name_bytes"));
    // Text with neither stays byte for byte what nlohmann writes.
    std::string plain = "caf\xc3\xa9 \xe4\xb8\xad \xe2\x80\x94 \t\"q\"";
    EXPECT_EQ(jsonOf(plain), nlohmann::json({{"name", plain}}).dump(2));
}

}  // namespace
}  // namespace pytstates
