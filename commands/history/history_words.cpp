// SPDX-License-Identifier: Apache-2.0
#include "commands/history/history_words.h"

#include <algorithm>
#include <set>

#include "commands/render/finding_words.h"

#include "symbols/text/base_name.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

// The TLS slot a pthread key is: a pybind11 record's thread-state cache, PyGILState's autoTSSkey,
// or neither.
struct Slot {
    enum class Kind { None, Pybind11, AutoTss, Key } kind = Kind::None;
    uint32_t key = 0;
    std::string record;  // Pybind11: the record's ID

    // As the findings name it: "pybind11 key 2 (__pybind11_internals_v4_...)"; "" for none.
    std::string words() const {
        switch (kind) {
            case Kind::Pybind11: return sourceWords(source::Pybind11Key{0, 0, key, record, false});
            case Kind::AutoTss: return sourceWords(source::AutoTss{0, 0, key, false});
            case Kind::Key: return "pthread key " + std::to_string(key);
            case Kind::None: break;
        }
        return "";
    }
    // Without the record's ID: "pybind11 key 2", "PyGILState's autoTSSkey slot", "pthread key 5".
    std::string shortWords() const {
        std::string all = words();
        return all.substr(0, all.find(" ("));
    }
    // Whether a finding's source is this slot: the same key of the same record, or PyGILState's key.
    bool names(const FindingSource& s) const {
        if (const auto* p = std::get_if<source::Pybind11Key>(&s)) return kind == Kind::Pybind11 && p->key == key && p->record == record;
        if (const auto* a = std::get_if<source::AutoTss>(&s)) return kind == Kind::AutoTss && !a->threadLocal && a->key == key;
        return false;
    }
};

class Words {
public:
    explicit Words(const Report& report) : r_(report) {}

    // The TLS slot a pthread key is.
    Slot slotOf(std::optional<uint32_t> key) const {
        if (!key) return {};
        for (const auto& view : r_.internals)
            if (view.record.tlsKey && *view.record.tlsKey == *key && !view.record.id.moduleLocal)
                return {Slot::Kind::Pybind11, *key, view.record.id.raw};
        for (const auto& rt : r_.runtimes)
            if (rt.autoTssKey && *rt.autoTssKey == *key) return {Slot::Kind::AutoTss, *key, ""};
        return {Slot::Kind::Key, *key, ""};
    }

    // Who did it: the first frame outside the CPython the breakpoint is in, with the pybind11
    // record its module uses, and the PyGILState call it came through, if any.
    std::string who(const HistoryEvent& e) const {
        if (e.frames.empty()) return "an unknown caller (no frames were recorded)";
        const std::string& cpython = e.frames.front().module;
        std::string via;
        const HistoryFrame* culprit = nullptr;
        for (const auto& f : e.frames) {
            if (f.module == cpython && !cpython.empty()) {
                if (f.function.rfind("PyGILState_", 0) == 0 && via.empty()) via = " through " + f.function;
                continue;
            }
            culprit = &f;
            break;
        }
        if (!culprit) {  // CPython itself, as far as the recorded frames go
            const HistoryFrame& last = e.frames.back();
            return named(last) + " (" + baseName(last.module) + ")" + via;
        }
        std::string out = named(*culprit) + " (" + (culprit->module.empty() ? "no known module" : baseName(culprit->module));
        auto records = recordsUsedBy(culprit->module);
        if (!records.empty()) out += ": " + records;
        return out + ")" + via;
    }

    static std::string named(const HistoryFrame& f) {
        return f.function.empty() ? "an unnamed function at " + hexAddress(f.pc) : f.function;
    }

    // "pybind11 key 1, cxxabi1002": the records a module uses, by their key (the report names
    // each key's full ID) and what sets their IDs apart.
    std::string recordsUsedBy(const std::string& module) const {
        std::string out;
        std::set<std::string> seen;
        for (const auto& view : r_.internals)
            for (const auto& use : view.record.modules) {
                const auto& id = view.record.id;
                if (use.path != module || id.moduleLocal || !seen.insert(id.raw).second) continue;
                std::string label = view.record.tlsKey ? "pybind11 key " + std::to_string(*view.record.tlsKey) : "pybind11";
                label += ", " + (id.abi.empty() ? id.raw : id.abi);
                out += (out.empty() ? "" : "; ") + label;
            }
        return out;
    }

    void attach(Finding& f, const HistoryLog& log) const {
        auto life = log.lastLife(f.tstate);
        if (life.empty()) return;
        const HistoryEvent *created = nullptr, *deleted = nullptr, *used = nullptr;
        std::vector<const HistoryEvent*> cached;
        const HistoryEvent* cleared = nullptr;
        for (const auto& e : life) {
            // A clear that no recorded delete followed is no lifecycle step the contract names: left
            // out of the events, told in the words (its deletion may have gone through a function
            // without a symbol).
            if (e.event == LifecycleEvent::Cleared) {
                cleared = &e;
                continue;
            }
            f.history.push_back({e, e.event == LifecycleEvent::Cached ? slotOf(e.key).words() : ""});
        }
        for (const auto& h : f.history) {
            const HistoryEvent& e = h.event;
            if (e.event == LifecycleEvent::Created && !created) created = &e;
            if (e.event == LifecycleEvent::Deleted) deleted = &e;
            if (e.event == LifecycleEvent::Used) used = &e;
            if (e.event == LifecycleEvent::Cached) cached.push_back(&e);
        }
        std::string line1 = "history: ";
        line1 += created ? "created by LWP " + std::to_string(created->lwp) + " in " + who(*created)
                         : "its creation was not recorded (before recording began)";
        // The slots among the finding's sources that cached it (the ones that still name it), each once.
        std::set<std::pair<int, std::string>> told;
        std::string cachedWords;
        for (const auto* e : cached) {
            Slot slot = slotOf(e->key);
            bool source = false;
            for (const auto& s : f.sources) source = source || slot.names(s);
            if (!source || !told.insert({e->lwp, slot.words()}).second) continue;
            cachedWords += std::string(cachedWords.empty() ? "" : ", ") + "in " + slot.shortWords() + " by " + who(*e);
            if (!f.lwp || e->lwp != *f.lwp) cachedWords += " on LWP " + std::to_string(e->lwp);
        }
        if (!cachedWords.empty()) line1 += "; cached " + cachedWords;
        std::string line2;
        if (deleted)
            line2 = "deleted by LWP " + std::to_string(deleted->lwp) + " in " + who(*deleted);
        else if (cleared)
            line2 = "cleared by LWP " + std::to_string(cleared->lwp) + " in " + who(*cleared) + " (no deletion recorded after it)";
        else
            line2 = "no deletion recorded";
        if (used) {
            line2 += "; last used by LWP " + std::to_string(used->lwp) + " in " + who(*used);
            if (deleted && used->seq > deleted->seq) line2 += ", after its deletion";
        }
        f.historyWords = {line1 + ";", line2 + "."};
    }

private:
    const Report& r_;
};

}  // namespace

namespace {

bool toldWithHistory(const Finding& f) {
    return f.tstate && findingInfo(f.code).history;
}

}  // namespace

void attachHistory(Report& report, const HistoryLog& log) {
    Words words(report);
    for (auto& f : report.findings)
        if (toldWithHistory(f)) words.attach(f, log);
}

std::vector<uint64_t> historyTstates(const Report& report) {
    std::vector<uint64_t> out;
    for (const auto& f : report.findings)
        if (toldWithHistory(f) && std::find(out.begin(), out.end(), f.tstate) == out.end()) out.push_back(f.tstate);
    return out;
}

}  // namespace pytstates
