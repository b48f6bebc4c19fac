// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/type_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace pytstates {

namespace {

bool disabled = false;
// Raised when what a question means or how it is answered changes: older entries are then ignored.
constexpr const char* kFormatVersion = "1";

std::string cacheDirectory(const std::string& kind) {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg == '/') return std::string(xdg) + "/pytstates/" + kind;
    const char* home = std::getenv("HOME");
    if (home && *home == '/') return std::string(home) + "/.cache/pytstates/" + kind;
    return {};
}

bool validBuildId(const std::string& id) {
    if (id.size() < 8 || id.size() > 128) return false;
    for (char c : id)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

// "pytstates-dwarf-answers 1 BUILDID SIZE"
std::string header(const std::string& kind, const std::string& buildId, const std::string& identity) {
    return "pytstates-" + kind + "-answers " + kFormatVersion + " " + buildId + " " + identity;
}

}  // namespace

void disableTypeCache() { disabled = true; }

bool typeCacheEnabled() {
    if (disabled) return false;
    const char* off = std::getenv("PYTSTATES_NO_CACHE");
    return !(off && *off && std::string(off) != "0");
}

std::optional<TypeAnswers> loadTypeAnswers(const std::string& buildId, uint64_t fileSize) {
    return loadAnswers("dwarf", buildId, std::to_string(fileSize));
}

void storeTypeAnswers(const std::string& buildId, uint64_t fileSize, const TypeAnswers& answers) {
    storeAnswers("dwarf", buildId, std::to_string(fileSize), answers);
}

std::optional<TypeAnswers> loadAnswers(const std::string& kind, const std::string& buildId, const std::string& identity) {
    std::string dir = cacheDirectory(kind);
    if (!typeCacheEnabled() || !validBuildId(buildId) || dir.empty()) return std::nullopt;
    std::ifstream in(dir + "/" + buildId);
    std::string line;
    if (!in || !std::getline(in, line) || line != header(kind, buildId, identity)) return std::nullopt;
    TypeAnswers answers;
    while (std::getline(in, line)) {
        auto tab = line.rfind('\t');
        if (tab == std::string::npos) return std::nullopt;  // not written by this format: ignored whole
        answers[line.substr(0, tab)] = line.substr(tab + 1);
    }
    if (!in.eof()) return std::nullopt;
    return answers;
}

void storeAnswers(const std::string& kind, const std::string& buildId, const std::string& identity, const TypeAnswers& answers) {
    std::string dir = cacheDirectory(kind);
    if (!typeCacheEnabled() || !validBuildId(buildId) || dir.empty()) return;
    // mkdir -p, private to the user.
    for (size_t pos = 1; pos != std::string::npos;) {
        pos = dir.find('/', pos + 1);
        ::mkdir(dir.substr(0, pos).c_str(), 0700);
    }
    std::ostringstream text;
    text << header(kind, buildId, identity) << '\n';
    for (const auto& [question, answer] : answers) text << question << '\t' << answer << '\n';
    std::string path = dir + "/" + buildId, temporary = path + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(temporary, std::ios::trunc);
        out << text.str();
        out.flush();
        if (!out) {
            ::unlink(temporary.c_str());
            return;
        }
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) ::unlink(temporary.c_str());
}

}  // namespace pytstates
