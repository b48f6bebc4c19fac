// SPDX-License-Identifier: Apache-2.0
// libFuzzer: the renderers with arbitrary bytes in every string a target can supply (paths,
// function and file names, IDs, messages). JSON must always parse as strict UTF-8 JSON, each
// replaced string must come with its exact bytes, and text must hold no raw control character.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands/render/render.h"

namespace {

std::vector<std::string> pieces(const uint8_t* data, size_t size) {
    std::vector<std::string> out(1);
    for (size_t i = 0; i < size; ++i) {
        if (data[i] == 0 && out.size() < 16) out.emplace_back();
        else out.back().push_back(static_cast<char>(data[i]));
    }
    while (out.size() < 8) out.emplace_back();
    return out;
}

void checkBytes(const nlohmann::json& j, const std::string& field, const std::string& want) {
    std::string hex = j.contains(field + "_bytes") ? j[field + "_bytes"].get<std::string>() : "";
    if (hex.empty()) {
        if (j[field].get<std::string>() != want) std::abort();
        return;
    }
    std::string raw;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    if (raw != want) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace pytstates;
    auto s = pieces(data, size);
    Report report;
    report.target.executable = s[0];
    Runtime rt;
    rt.modulePath = s[1];
    rt.version = s[2];
    Interpreter interp;
    ThreadState ts;
    ts.address = 0x1000;
    ts.frames.push_back({0x2000, s[3], s[4], 7});
    interp.tstates.push_back(ts);
    rt.interpreters.push_back(interp);
    rt.notes.push_back(s[5]);
    report.runtimes.push_back(rt);
    // A finding's words come from its facts: the target's bytes reach them through a record's ID.
    Finding stale;
    stale.code = FindingCode::StaleTstate;
    stale.lwp = 1;
    stale.tstate = 0x1000;
    stale.sources.emplace_back(source::Pybind11Key{1, 0x1000, 2, s[6], false});
    report.findings.push_back(stale);
    report.warnings.push_back(s[7]);
    RenderOptions options;
    options.command = Command::Check;
    nlohmann::json j = nlohmann::json::parse(renderJson(report, options));  // throws (a crash) when invalid
    checkBytes(j["target"], "executable", s[0]);
    checkBytes(j["runtimes"][0], "module", s[1]);
    const auto& frame = j["runtimes"][0]["interpreters"][0]["tstates"][0]["frames"][0];
    checkBytes(frame, "function", s[3]);
    checkBytes(frame, "file", s[4]);
    if (j["findings"][0]["message"].get<std::string>().empty()) std::abort();
    std::string text = renderText(report, options);
    for (unsigned char c : text)
        if ((c < 0x20 && c != '\n') || c == 0x7f) std::abort();
    return 0;
}
