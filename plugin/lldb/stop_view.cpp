// SPDX-License-Identifier: Apache-2.0
#include "plugin/lldb/stop_view.h"

#include <exception>
#include <vector>

#include "plugin/engine/pytstates.h"
#include "plugin/lldb/lldb_target.h"

namespace pytstates::lldbfront {

namespace {

// The view and the target description its reads call back into: the view reads memory lazily
// (a frame's locals, an object's repr) for as long as it lives, through target.input.
struct CachedView {
    uint32_t process = 0, stop = 0;
    std::unique_ptr<LldbTarget> target;
    pytstates_view* view = nullptr;
    std::string failure;  // the stop holds no view (no CPython): asked once per stop
    ~CachedView() {
        if (view) pytstates_view_close(view);
    }
};

// Left to the process's end rather than destroyed at exit: its SB objects must not outlive lldb's
// own teardown, which runs before the plugin's static destructors.
std::unique_ptr<CachedView>& cached = *new std::unique_ptr<CachedView>;

bool isCore(lldb::SBProcess process) {
    const char* plugin = process.GetPluginName();
    return plugin && std::string(plugin).find("core") != std::string::npos;
}

}  // namespace

std::string Answer::text() const {
    auto it = json.find("text");
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void dropView() { cached.reset(); }

Answer askView(lldb::SBProcess process, const nlohmann::json& question) {
    Answer answer;
    if (!process.IsValid() || process.GetNumThreads() == 0) {
        answer.error = "no process or core: attach to a process or load a core first (target create --core FILE)";
        return answer;
    }
    lldb::StateType state = process.GetState();
    if (state == lldb::eStateRunning || state == lldb::eStateStepping) {
        answer.error = "the process is running: stop it first (process interrupt)";
        return answer;
    }
    uint32_t id = process.GetUniqueID(), stop = process.GetStopID();
    if (!cached || cached->process != id || cached->stop != stop) {
        cached.reset();
        auto fresh = std::make_unique<CachedView>();
        fresh->process = id;
        fresh->stop = stop;
        fresh->target = std::make_unique<LldbTarget>(process.GetTarget(), process, !isCore(process));
        Owned error;
        if (pytstates_view_open(&fresh->target->input, nullptr, 0, &fresh->view, &error.text) != 0 || !fresh->view) {
            fresh->view = nullptr;
            fresh->failure = error.text ? error.str() : "the engine opened no view";
        }
        cached = std::move(fresh);
    }
    if (!cached->view) {
        answer.error = cached->failure;
        return answer;
    }
    Owned text, error;
    std::string q = question.dump();
    if (pytstates_view_ask(cached->view, q.c_str(), &text.text, &error.text) != 0) {
        answer.error = error.text ? error.str() : "no answer";
        return answer;
    }
    answer.json = nlohmann::json::parse(text.str(), nullptr, false);
    if (answer.json.is_discarded() || !answer.json.is_object()) answer.error = "the engine's answer is no JSON object";
    return answer;
}

}  // namespace pytstates::lldbfront
