// SPDX-License-Identifier: Apache-2.0
#include "symbols/modules/debuginfod_client.h"
#include "symbols/libraries/debuginfod_calls.h"
#include "symbols/progress.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace pytstates {

std::shared_ptr<DebuginfodClient> DebuginfodClient::fromEnvironment(ProgressLine progress) {
    const char* urls = std::getenv(DEBUGINFOD_URLS_ENV_VAR);
    if (!urls || !*urls) return nullptr;
    std::string why;
    const DebuginfodCalls* calls = debuginfod(&why);
    if (!calls) {
        if (progress) progress(std::string("pytstates: $" DEBUGINFOD_URLS_ENV_VAR " is set, but nothing is fetched: ") + why);
        return nullptr;
    }
    debuginfod_client* client = calls->begin();
    if (!client) return nullptr;
    return std::shared_ptr<DebuginfodClient>(new DebuginfodClient(client, std::move(progress), urls));
}

DebuginfodClient::DebuginfodClient(debuginfod_client* client, ProgressLine progress, std::string urls)
    : client_(client), progress_(std::move(progress)), urls_(std::move(urls)) {
    debuginfod()->setUserData(client_, this);
    debuginfod()->setProgressfn(client_, &DebuginfodClient::onProgress);
}

DebuginfodClient::~DebuginfodClient() { debuginfod()->end(client_); }

// Called while a transfer runs (not for a file already in the cache): one line per file.
int DebuginfodClient::onProgress(debuginfod_client* client, long done, long total) {
    auto* self = static_cast<DebuginfodClient*>(debuginfod()->getUserData(client));
    if (self && progressWanted())
        tellProgress("pytstates: debuginfod: fetching " + self->current_ + ": " + std::to_string(done >> 10) + " KiB" +
                     (total > 0 ? " of " + std::to_string(total >> 10) + " KiB" : ""));
    if (self && !self->told_ && self->progress_) {
        self->told_ = true;
        self->progress_("pytstates: debuginfod: fetching " + self->current_ + " from " + self->urls_);
    }
    return 0;  // go on
}

std::optional<std::string> DebuginfodClient::fetch(bool debug, const std::string& buildId, const std::string& forWhat) {
    if (buildId.empty() || failed_.count({debug, buildId})) return std::nullopt;
    current_ = std::string(debug ? "the debug file" : "the file") + " of " + forWhat + " (build-id " + buildId + ")";
    told_ = false;
    char* path = nullptr;
    const auto* id = reinterpret_cast<const unsigned char*>(buildId.c_str());
    int fd = debug ? debuginfod()->findDebuginfo(client_, id, 0, &path) : debuginfod()->findExecutable(client_, id, 0, &path);
    if (fd < 0) {
        failed_.insert({debug, buildId});
        if (told_ && progress_) progress_("pytstates: debuginfod: " + current_ + ": " + std::strerror(-fd));
        return std::nullopt;
    }
    ::close(fd);
    std::string out = path ? path : "";
    std::free(path);
    if (out.empty()) return std::nullopt;
    return out;
}

std::optional<std::string> DebuginfodClient::executable(const std::string& buildId, const std::string& forWhat) {
    return fetch(false, buildId, forWhat);
}

std::optional<std::string> DebuginfodClient::debugInfo(const std::string& buildId, const std::string& forWhat) {
    return fetch(true, buildId, forWhat);
}

}  // namespace pytstates
