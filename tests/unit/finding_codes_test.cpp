// SPDX-License-Identifier: Apache-2.0
// The table of finding codes against what tells users about them: the man page's FINDINGS section
// lists every code with its severity and no other, README's findings table names every code with
// its severity and no other; and the table itself: unique names, every code once.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "commands/analysis/finding_codes.h"

namespace pytstates {
namespace {

std::string readSource(const std::string& path) {
    std::ifstream in(std::string(PYTSTATES_SOURCE_DIR) + "/" + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The text between a line starting with `from` and the next line starting with `to`.
std::string section(const std::string& text, const std::string& from, const std::string& to) {
    auto start = text.find("\n" + from);
    if (start == std::string::npos) return "";
    auto end = text.find("\n" + to, start + from.size() + 1);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(FindingCodesTest, TableHoldsEveryCodeOnceWithAUniqueName) {
    std::set<std::string> names;
    for (size_t i = 0; i < findingCodes().size(); ++i) {
        const FindingCodeInfo& info = findingCodes()[i];
        EXPECT_EQ(static_cast<size_t>(info.code), i);
        EXPECT_EQ(&findingInfo(info.code), &info);
        EXPECT_TRUE(names.insert(info.name).second) << info.name;
        EXPECT_TRUE(std::regex_match(info.name, std::regex("[a-z0-9]+(-[a-z0-9]+)*"))) << info.name;
        EXPECT_NE(std::string(info.when), "") << info.name;
    }
}

TEST(FindingCodesTest, ManPageListsEveryCodeWithItsSeverity) {
    std::string page = readSource("packaging/pytstates.1.in");
    ASSERT_NE(page, "") << "packaging/pytstates.1.in is not readable";
    std::string findings = section(page, ".SH FINDINGS", ".SH ");
    ASSERT_NE(findings, "") << "the man page has no FINDINGS section";
    // ".B stale\-tstate" and the next line "(error) ..."
    std::regex entry(R"(\n\.B ([a-z0-9\\-]+)\n\((error|warning|info)\))");
    std::map<std::string, std::string> listed;
    for (std::sregex_iterator it(findings.begin(), findings.end(), entry), end; it != end; ++it) {
        std::string name = std::regex_replace((*it)[1].str(), std::regex(R"(\\-)"), "-");
        listed[name] = (*it)[2];
    }
    for (const auto& info : findingCodes()) {
        auto at = listed.find(info.name);
        ASSERT_NE(at, listed.end()) << "the man page's FINDINGS lack " << info.name;
        EXPECT_EQ(at->second, severityName(info.severity)) << info.name;
    }
    std::set<std::string> known;
    for (const auto& info : findingCodes()) known.insert(info.name);
    for (const auto& [name, severity] : listed) EXPECT_TRUE(known.count(name)) << "the man page lists " << name << ", no code";
}

TEST(FindingCodesTest, ReadmeTellsEveryCodeWithItsSeverity) {
    std::string readme = readSource("README.md");
    ASSERT_NE(readme, "") << "README.md is not readable";
    std::string findings = section(readme, "## What each finding means", "## ");
    ASSERT_NE(findings, "") << "README.md has no findings section";
    // "| `stale-tstate` | error | what it means | what to do |"
    std::regex row(R"(\n\| `([a-z0-9-]+)` \| (error|warning|info) \|[^\n]*\|[^\n]*\|)");
    std::map<std::string, std::string> told;
    for (std::sregex_iterator it(findings.begin(), findings.end(), row), end; it != end; ++it) told[(*it)[1]] = (*it)[2];
    for (const auto& info : findingCodes()) {
        auto at = told.find(info.name);
        ASSERT_NE(at, told.end()) << "README's findings table lacks " << info.name;
        EXPECT_EQ(at->second, severityName(info.severity)) << info.name;
    }
    std::set<std::string> known;
    for (const auto& info : findingCodes()) known.insert(info.name);
    for (const auto& [name, severity] : told) EXPECT_TRUE(known.count(name)) << "README tells " << name << ", no code";
}

}  // namespace
}  // namespace pytstates
