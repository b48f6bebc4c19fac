// SPDX-License-Identifier: Apache-2.0
#include "commands/view.h"

#include <algorithm>
#include <exception>

#include <nlohmann/json.hpp>

#include "commands/analysis/debugger_view.h"
#include "commands/render/render_view.h"
#include "commands/render/text_encoding.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {

using json = nlohmann::json;

// A question that cannot be answered: its one line.
struct Refused {
    std::string why;
};

const json& field(const json& q, const char* name) {
    auto it = q.find(name);
    if (it == q.end()) throw Refused{std::string("the question needs \"") + name + "\""};
    return *it;
}

long long integer(const json& q, const char* name) {
    const json& v = field(q, name);
    if (!v.is_number_integer()) throw Refused{std::string("\"") + name + "\" must be an integer"};
    return v.get<long long>();
}

long long integerOr(const json& q, const char* name, long long otherwise) { return q.contains(name) ? integer(q, name) : otherwise; }

bool flag(const json& q, const char* name) {
    auto it = q.find(name);
    return it != q.end() && it->is_boolean() && it->get<bool>();
}

// An address as a number, or a string ("0x7ffff0000b70", decimal).
uint64_t address(const json& q, const char* name) {
    const json& v = field(q, name);
    if (v.is_number_unsigned() || v.is_number_integer()) return v.get<uint64_t>();
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        try {
            size_t used = 0;
            uint64_t a = std::stoull(s, &used, 0);
            if (used == s.size()) return a;
        } catch (const std::exception&) {
        }
        throw Refused{"'" + shown(s) + "' is not an address"};
    }
    throw Refused{std::string("\"") + name + "\" must be an address"};
}

ThreadStack stackOf(const DebuggerView& view, const json& q) {
    std::string why;
    auto s = view.stack(static_cast<int>(integer(q, "lwp")), &why);
    if (!s) throw Refused{why};
    return *s;
}

const ViewFrame& frameOf(const ThreadStack& s, const json& q) {
    long long k = integerOr(q, "frame", 0);
    if (k < 0 || static_cast<size_t>(k) >= s.frames.size())
        throw Refused{s.frames.empty() ? "LWP " + std::to_string(s.lwp) + " has no Python frame"
                                       : "no Python frame #" + std::to_string(k) + " (LWP " + std::to_string(s.lwp) + " has #0-#" +
                                             std::to_string(s.frames.size() - 1) + ")"};
    return s.frames[static_cast<size_t>(k)];
}

json answer(DebuggerView& view, const Target& target, const json& q) {
    if (!q.is_object()) throw Refused{"the question must be a JSON object"};
    const json& ask = field(q, "ask");
    if (!ask.is_string()) throw Refused{"\"ask\" must be a string"};
    const std::string& what = ask.get_ref<const std::string&>();
    if (what == "stack") return stackAnswer(stackOf(view, q));
    if (what == "bt" || what == "frame") {
        BtOptions o;
        o.native = flag(q, "native");
        o.locals = flag(q, "locals");
        o.full = flag(q, "full");
        o.sysroot = target.sysroot();
        if (q.contains("selected")) o.selected = static_cast<size_t>(std::max(0LL, integer(q, "selected")));
        if (auto it = q.find("native_frames"); it != q.end() && it->is_array())
            for (const auto& f : *it)
                if (f.is_array() && f.size() == 2 && f[0].is_number_integer() && f[1].is_number_unsigned())
                    o.debuggerFrames.emplace_back(f[0].get<long long>(), f[1].get<uint64_t>());
        if (auto it = q.find("eval_levels"); it != q.end() && it->is_array())
            for (const auto& level : *it) o.evalLevels.push_back(level.is_number_integer() ? level.get<long long>() : -1);
        ThreadStack s = stackOf(view, q);
        if (what == "frame") return frameAnswer(frameOf(s, q), o);
        return btAnswer(view, s, o);
    }
    if (what == "locals") {
        ThreadStack s = stackOf(view, q);
        const ViewFrame& f = frameOf(s, q);
        return localsAnswer(f, view.locals(f));
    }
    if (what == "print") {
        ThreadStack s = stackOf(view, q);
        const ViewFrame& f = frameOf(s, q);
        const json& name = field(q, "name");
        if (!name.is_string() || name.get_ref<const std::string&>().empty()) throw Refused{"\"name\" must be a name"};
        ViewName found = view.lookup(f, name.get<std::string>());
        if (found.scope.empty()) throw Refused{notFoundWords(name.get<std::string>())};
        return printAnswer(found);
    }
    if (what == "list") {
        ThreadStack s = stackOf(view, q);
        const ViewFrame& f = frameOf(s, q);
        // py-list's ranges: around the line (5 either side), START..START+10, or START..END.
        long long start = integerOr(q, "start", std::max(1, f.frame.line - 5));
        long long end = integerOr(q, "end", q.contains("start") ? start + 10 : f.frame.line + 5);
        start = std::max(1LL, start);
        if (end < start) throw Refused{"the range ends before it starts"};
        end = std::min(end, start + 10000);
        auto lines = sourceLines(target.sysroot(), f.frame.file, static_cast<int>(start), static_cast<int>(end));
        if (lines.empty()) throw Refused{"cannot read the source of " + shown(f.frame.file) + " (lines " + std::to_string(start) + "-" + std::to_string(end) + ")"};
        return listAnswer(f, lines, static_cast<int>(start));
    }
    if (what == "tstate") return tstateAnswer(view.report(), view.tstate(address(q, "address")));
    if (what == "interpreter") {
        uint64_t a = address(q, "address");
        const Interpreter* interp = view.interpreterAt(a);
        if (!interp) throw Refused{hexAddress(a) + " is no interpreter of this process"};
        return interpreterAnswer(view.report(), *interp);
    }
    if (what == "object") {
        uint64_t a = address(q, "address");
        ObjectFacts o = view.object(a);
        if (!o.readable) throw Refused{hexAddress(a) + " does not read as a Python object"};
        return objectAnswer(a, o);
    }
    if (what == "find-thread") {
        const json& t = field(q, "target");
        std::string wanted = t.is_string() ? t.get<std::string>() : t.is_number() ? std::to_string(t.get<uint64_t>()) : "";
        if (wanted.empty()) throw Refused{"\"target\" must be a thread state, a Python thread name or an asyncio task"};
        FoundThread found = view.findThread(wanted);
        if (!found.lwp) throw Refused{shown(found.why)};
        return foundThreadAnswer(view.report(), found);
    }
    if (what == "gil-holder") return gilHolderAnswer(view.report());
    throw Refused{"unknown question '" + shown(what) + "' (stack, bt, frame, locals, print, list, tstate, interpreter, object, find-thread, gil-holder)"};
}

}  // namespace

std::unique_ptr<ViewSession> ViewSession::open(std::shared_ptr<const Target> target, const std::vector<std::string>& args,
                                               std::string* error) {
    try {
        bool useDwarf = true;
        for (const auto& a : args) {
            if (a == "--no-dwarf") useDwarf = false;
            else {
                *error = "unknown argument '" + shown(a) + "' (expected --no-dwarf)";
                return nullptr;
            }
        }
        std::unique_ptr<ViewSession> session(new ViewSession());
        session->target_ = std::move(target);
        session->view_ = std::make_unique<DebuggerView>(*session->target_, useDwarf);
        return session;
    } catch (const std::exception& e) {
        *error = shown(e.what());
    } catch (...) {
        *error = "internal error";
    }
    return nullptr;
}

ViewSession::~ViewSession() = default;

int ViewSession::ask(const std::string& question, std::string* out, std::string* error) {
    try {
        json q = json::parse(question, nullptr, false);
        if (q.is_discarded()) throw Refused{"the question is not JSON"};
        *out = answer(*view_, *target_, q).dump(-1, ' ', false, json::error_handler_t::replace);
        return 0;
    } catch (const Refused& r) {
        *error = r.why;
    } catch (const std::exception& e) {
        *error = shown(e.what());
    } catch (...) {
        *error = "internal error";
    }
    return 2;
}

}  // namespace pytstates
