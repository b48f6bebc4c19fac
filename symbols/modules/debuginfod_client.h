// SPDX-License-Identifier: Apache-2.0
// Files fetched by build-id from the debuginfod servers $DEBUGINFOD_URLS names (the elfutils
// convention), through elfutils' libdebuginfod, into its usual cache
// ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client): a module's file when the target's is
// missing or does not match, a debug file when no local one is found.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

struct debuginfod_client;

namespace pytstates {

class DebuginfodClient {
public:
    using ProgressLine = std::function<void(const std::string&)>;

    // Null when $DEBUGINFOD_URLS is unset or empty, or the library cannot start a session.
    static std::shared_ptr<DebuginfodClient> fromEnvironment(ProgressLine progress);
    ~DebuginfodClient();
    DebuginfodClient(const DebuginfodClient&) = delete;
    DebuginfodClient& operator=(const DebuginfodClient&) = delete;

    // The cached file's path, or nullopt (no server has it, or the fetch failed). `forWhat` names
    // the module in the progress line.
    std::optional<std::string> executable(const std::string& buildId, const std::string& forWhat);
    std::optional<std::string> debugInfo(const std::string& buildId, const std::string& forWhat);

private:
    DebuginfodClient(debuginfod_client* client, ProgressLine progress, std::string urls);
    std::optional<std::string> fetch(bool debug, const std::string& buildId, const std::string& forWhat);
    static int onProgress(debuginfod_client* client, long done, long total);

    debuginfod_client* client_;
    ProgressLine progress_;
    std::string urls_;
    std::string current_;   // what is being fetched, for the progress line
    bool told_ = false;     // the progress line for current_ was printed
    std::set<std::pair<bool, std::string>> failed_;  // (debug, build-id) asked in vain: not asked again
};

}  // namespace pytstates
