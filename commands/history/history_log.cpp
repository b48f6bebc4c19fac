// SPDX-License-Identifier: Apache-2.0
#include "commands/history/history_log.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

#include "symbols/native/native_stacks.h"
#include "symbols/regular_file.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

uint64_t unhex(const nlohmann::json& v) {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (!v.is_string()) throw std::runtime_error("an address is neither a number nor a hex string");
    return std::stoull(v.get<std::string>(), nullptr, 16);
}

std::optional<LifecycleEvent> eventNamed(const std::string& name) {
    for (auto e : {LifecycleEvent::Created, LifecycleEvent::Cleared, LifecycleEvent::Deleted, LifecycleEvent::Cached, LifecycleEvent::Used})
        if (name == lifecycleEventName(e)) return e;
    return std::nullopt;
}

// One event of a saved history; throws std::runtime_error (one line) when it is malformed.
HistoryEvent eventFrom(const nlohmann::json& ej) {
    try {
        HistoryEvent e;
        e.seq = ej.at("seq").get<uint64_t>();
        auto kind = eventNamed(ej.at("event").get<std::string>());
        if (!kind) throw std::runtime_error("unknown event '" + ej.at("event").get<std::string>() + "'");
        e.event = *kind;
        e.function = ej.value("function", "");
        e.tstate = unhex(ej.at("tstate"));
        e.lwp = ej.value("lwp", 0);
        if (ej.contains("key") && !ej["key"].is_null()) e.key = ej["key"].get<uint32_t>();
        e.ms = ej.value("ms", 0.0);
        if (ej.contains("pcs"))
            for (const auto& pc : ej["pcs"]) e.pcs.push_back(unhex(pc));
        if (ej.contains("frames"))
            for (const auto& f : ej["frames"]) e.frames.push_back({unhex(f.at("pc")), f.value("function", ""), f.value("module", "")});
        return e;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("a saved history with a malformed field: ") + e.what());
    } catch (const std::invalid_argument&) {
        throw std::runtime_error("a saved history with an address that is not hex");
    } catch (const std::out_of_range&) {
        throw std::runtime_error("a saved history with an address out of range");
    }
}

}  // namespace

void HistoryLog::keep(Track& track, HistoryEvent event) {
    bool use = event.event == LifecycleEvent::Used;
    auto& list = use ? track.uses : track.lifecycle;
    size_t limit = use ? limits_.usesPerTstate : limits_.lifecyclePerTstate;
    track.lastSeq = event.seq;
    list.push_back(std::move(event));
    while (list.size() > limit) {
        list.pop_front();
        ++dropped_;
    }
}

void HistoryLog::evictIfFull() {
    while (tracks_.size() > limits_.tstates) {
        auto oldest = tracks_.begin();
        for (auto it = tracks_.begin(); it != tracks_.end(); ++it)
            if (it->second.lastSeq < oldest->second.lastSeq) oldest = it;
        dropped_ += oldest->second.lifecycle.size() + oldest->second.uses.size();
        tracks_.erase(oldest);
    }
}

void HistoryLog::record(LifecycleEvent event, const std::string& function, bool atReturn, uint64_t tstate, int lwp,
                        std::optional<uint32_t> key, std::vector<uint64_t> pcs, double ms) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++hits_;
    if (!tstate) return;
    Track& track = tracks_[tstate];
    HistoryEvent e;
    e.seq = nextSeq_++;
    e.event = event;
    e.function = function;
    e.tstate = tstate;
    e.lwp = lwp;
    e.key = key;
    e.ms = ms;
    e.pcs = std::move(pcs);
    HistoryEvent* last = track.lifecycle.empty() ? nullptr : &track.lifecycle.back();
    bool lastIsNewest = last && (track.uses.empty() || track.uses.back().seq < last->seq);
    // One call seen by several breakpoints (PyThreadState_New returning what new_threadstate
    // returned; PyThreadState_Clear, then _PyThreadState_DeleteCurrent, then tstate_delete_common)
    // is one event. Returns are seen innermost first: the outer function's frames say more. Entries
    // are seen outermost first: the first keeps its frames, and a clear followed by a delete is the delete.
    if (lastIsNewest && last->lwp == lwp) {
        if (event == LifecycleEvent::Created && last->event == LifecycleEvent::Created && atReturn) {
            last->function = function;
            last->pcs = std::move(e.pcs);
            last->frames.clear();
            track.lastSeq = e.seq;
            return;
        }
        if (event == LifecycleEvent::Deleted && (last->event == LifecycleEvent::Deleted || last->event == LifecycleEvent::Cleared)) {
            last->event = LifecycleEvent::Deleted;
            track.lastSeq = e.seq;
            return;
        }
    }
    ++recorded_;
    keep(track, std::move(e));
    evictIfFull();
}

std::vector<HistoryEvent> HistoryLog::events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<HistoryEvent> out;
    for (const auto& [tstate, track] : tracks_) {
        out.insert(out.end(), track.lifecycle.begin(), track.lifecycle.end());
        out.insert(out.end(), track.uses.begin(), track.uses.end());
    }
    std::sort(out.begin(), out.end(), [](const HistoryEvent& a, const HistoryEvent& b) { return a.seq < b.seq; });
    return out;
}

std::vector<HistoryEvent> HistoryLog::lastLife(uint64_t tstate) const {
    std::vector<HistoryEvent> all;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = tracks_.find(tstate);
        if (it == tracks_.end()) return all;
        all.insert(all.end(), it->second.lifecycle.begin(), it->second.lifecycle.end());
        all.insert(all.end(), it->second.uses.begin(), it->second.uses.end());
    }
    std::sort(all.begin(), all.end(), [](const HistoryEvent& a, const HistoryEvent& b) { return a.seq < b.seq; });
    // The last life begins after the deletion before its last creation: what its creation did
    // before returning it (PyGILState's caching inside PyThreadState_New) belongs to it.
    size_t created = all.size(), start = 0;
    for (size_t i = 0; i < all.size(); ++i)
        if (all[i].event == LifecycleEvent::Created) created = i;
    for (size_t i = 0; i < created && created < all.size(); ++i)
        if (all[i].event == LifecycleEvent::Deleted) start = i + 1;
    return std::vector<HistoryEvent>(all.begin() + static_cast<long>(start), all.end());
}

bool HistoryLog::empty() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return tracks_.empty();
}

void HistoryLog::nameFrames(const Target& target, bool useDwarf) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<NativeStacks> stacks;
    auto name = [&](HistoryEvent& e) {
        if (!e.frames.empty() || e.pcs.empty()) return;
        if (!stacks) stacks = std::make_unique<NativeStacks>(target, useDwarf);
        for (size_t i = 0; i < e.pcs.size(); ++i) {
            auto frames = stacks->at(e.pcs[i], i == 0);
            if (frames.empty()) e.frames.push_back({e.pcs[i], "", ""});
            for (const auto& f : frames) e.frames.push_back({e.pcs[i], f.function, f.module});
        }
    };
    for (auto& [tstate, track] : tracks_) {
        for (auto& e : track.lifecycle) name(e);
        for (auto& e : track.uses) name(e);
    }
}

size_t HistoryLog::nameLastLives(const Target& target, const std::vector<uint64_t>& tstates, bool useDwarf, size_t maxPcs) {
    std::lock_guard<std::mutex> lock(mutex_);
    // The events to name, those the words use first: each life's lifecycle events, then its uses
    // from the last.
    std::vector<HistoryEvent*> order;
    for (uint64_t tstate : tstates) {
        auto it = tracks_.find(tstate);
        if (it == tracks_.end()) continue;
        std::vector<HistoryEvent*> life;
        for (auto& e : it->second.lifecycle) life.push_back(&e);
        for (auto& e : it->second.uses) life.push_back(&e);
        std::sort(life.begin(), life.end(), [](const HistoryEvent* a, const HistoryEvent* b) { return a->seq < b->seq; });
        // As lastLife cuts it.
        size_t created = life.size(), start = 0;
        for (size_t i = 0; i < life.size(); ++i)
            if (life[i]->event == LifecycleEvent::Created) created = i;
        for (size_t i = 0; i < created && created < life.size(); ++i)
            if (life[i]->event == LifecycleEvent::Deleted) start = i + 1;
        life.erase(life.begin(), life.begin() + static_cast<long>(start));
        std::stable_sort(life.begin(), life.end(), [](const HistoryEvent* a, const HistoryEvent* b) {
            bool aUse = a->event == LifecycleEvent::Used, bUse = b->event == LifecycleEvent::Used;
            if (aUse != bUse) return !aUse;
            return aUse && a->seq > b->seq;
        });
        for (HistoryEvent* e : life)
            if (e->frames.empty() && !e->pcs.empty()) order.push_back(e);
    }
    // The pcs to look up: the innermost few of every event first (who did it is the first frame
    // outside CPython), then the rest, in that order, until maxPcs.
    constexpr size_t kInnermost = 16;
    std::unordered_set<uint64_t> chosen;
    for (size_t pass = 0; pass < 2; ++pass)
        for (HistoryEvent* e : order)
            for (size_t i = pass ? kInnermost : 0; i < (pass ? e->pcs.size() : std::min(kInnermost, e->pcs.size())); ++i)
                if (chosen.size() < maxPcs) chosen.insert(e->pcs[i]);
    std::unique_ptr<NativeStacks> stacks;
    size_t unnamed = 0;
    for (HistoryEvent* e : order) {
        for (size_t i = 0; i < e->pcs.size(); ++i) {
            uint64_t pc = e->pcs[i];
            if (!chosen.count(pc)) {
                e->frames.push_back({pc, "", ""});
                ++unnamed;
                continue;
            }
            if (!stacks) stacks = std::make_unique<NativeStacks>(target, useDwarf);
            auto frames = stacks->at(pc, i == 0);
            if (frames.empty()) e->frames.push_back({pc, "", ""});
            for (const auto& f : frames) e->frames.push_back({pc, f.function, f.module});
        }
    }
    return unnamed;
}

std::string HistoryLog::toJson() const {
    using nlohmann::json;
    json events = json::array();
    for (const auto& e : this->events()) {
        json frames = json::array();
        for (const auto& f : e.frames) frames.push_back({{"pc", hexAddress(f.pc)}, {"function", f.function}, {"module", f.module}});
        json pcs = json::array();
        for (uint64_t pc : e.pcs) pcs.push_back(hexAddress(pc));
        json j = {{"seq", e.seq}, {"event", lifecycleEventName(e.event)}, {"function", e.function}, {"tstate", hexAddress(e.tstate)},
                  {"lwp", e.lwp}, {"key", e.key ? json(*e.key) : json(nullptr)}, {"ms", e.ms}, {"pcs", pcs}, {"frames", frames}};
        events.push_back(j);
    }
    json out = {{"pytstates_history", 1}, {"pid", pid}, {"executable", executable}, {"watched", watched}, {"cannot", cannot},
                {"hits", hits_}, {"recorded", recorded_}, {"dropped", dropped_},
                {"limits", {{"lifecycle_per_tstate", limits_.lifecyclePerTstate}, {"uses_per_tstate", limits_.usesPerTstate},
                            {"tstates", limits_.tstates}}},
                {"events", events}};
    return out.dump(1) + "\n";
}

std::shared_ptr<HistoryLog> HistoryLog::fromFile(const std::string& path) {
    // Like --core: a FIFO, a device (/dev/zero) or a directory is refused before it is opened, and
    // no more than a saved history can be is read.
    std::string why;
    int fd = openRegularFile(path, &why);
    if (fd < 0) throw std::runtime_error("cannot read the history file " + why);
    std::string text;
    struct stat st {};
    bool tooLarge = ::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) > kMaxFileSize;
    if (!tooLarge) {
        text.resize(static_cast<size_t>(st.st_size) + 1);  // one more: a file that grew since is seen to
        size_t got = 0;
        while (got < text.size()) {
            ssize_t n = ::read(fd, &text[got], text.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                int e = errno;
                ::close(fd);
                throw std::runtime_error("cannot read the history file " + path + ": " + std::strerror(e));
            }
            if (n == 0) break;
            got += static_cast<size_t>(n);
        }
        text.resize(got);
        tooLarge = got > kMaxFileSize;
    }
    ::close(fd);
    if (tooLarge)
        throw std::runtime_error("cannot read the history file " + path + ": larger than a saved history may be (" +
                                 std::to_string(kMaxFileSize >> 20) + " MiB)");
    try {
        return fromJson(text);
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

std::shared_ptr<HistoryLog> HistoryLog::fromJson(const std::string& text) {
    using nlohmann::json;
    // Each event is taken as it is parsed and dropped from the tree (which is ten times the text):
    // memory grows with the events kept, not with the file.
    std::vector<HistoryEvent> events;
    std::string topKey, eventError;
    auto take = [&](int depth, json::parse_event_t what, json& parsed) {
        if (depth == 1 && what == json::parse_event_t::key && parsed.is_string()) topKey = parsed.get<std::string>();
        if (depth != 2 || what != json::parse_event_t::object_end || topKey != "events") return true;
        if (eventError.empty()) {
            try {
                events.push_back(eventFrom(parsed));
            } catch (const std::exception& e) {
                eventError = e.what();
            }
        }
        return false;
    };
    json j = json::parse(text, take, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("pytstates_history"))
        throw std::runtime_error("not a history saved by py-tstates-record save (no \"pytstates_history\" object)");
    if (j["pytstates_history"] != 1) throw std::runtime_error("a history of an unknown format version " + j["pytstates_history"].dump());
    if (!eventError.empty()) throw std::runtime_error(eventError);
    try {
        Limits limits;
        if (j.contains("limits")) {
            limits.lifecyclePerTstate = j["limits"].value("lifecycle_per_tstate", limits.lifecyclePerTstate);
            limits.usesPerTstate = j["limits"].value("uses_per_tstate", limits.usesPerTstate);
            limits.tstates = j["limits"].value("tstates", limits.tstates);
        }
        auto log = std::make_shared<HistoryLog>(limits);
        log->pid = j.value("pid", 0);
        log->executable = j.value("executable", "");
        log->watched = j.value("watched", std::vector<std::string>{});
        log->cannot = j.value("cannot", std::vector<std::string>{});
        log->hits_ = j.value("hits", uint64_t(0));
        log->dropped_ = j.value("dropped", uint64_t(0));
        log->recorded_ = j.value("recorded", uint64_t(0));
        if (!j.at("events").is_array()) throw std::runtime_error("a saved history whose \"events\" is not an array");
        for (auto& e : events) {
            Track& track = log->tracks_[e.tstate];
            log->nextSeq_ = std::max(log->nextSeq_, e.seq + 1);
            log->keep(track, std::move(e));
        }
        return log;
    } catch (const json::exception& e) {
        throw std::runtime_error(std::string("a saved history with a malformed field: ") + e.what());
    }
}

}  // namespace pytstates
