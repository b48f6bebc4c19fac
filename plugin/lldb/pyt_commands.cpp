// SPDX-License-Identifier: Apache-2.0
#include "plugin/lldb/pyt_commands.h"

#include <algorithm>
#include <cstdio>
#include <list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugin/lldb/guarded_command.h"
#include "plugin/lldb/python_frames.h"
#include "plugin/lldb/stop_view.h"
#include "plugin/lldb/value_address.h"

namespace pytstates::lldbfront {

namespace {

using nlohmann::json;

enum class Verb { Bt, BtFull, Up, Down, Frame, List, Locals, Print, Tstate, Thread };

struct VerbInfo {
    Verb verb;
    const char* name;
    const char* help;
    const char* syntax;
};

const VerbInfo kVerbs[] = {
    {Verb::Bt, "bt",
     "The selected thread's Python stack (its thread state, GIL line, file:line:column of every frame); --all (-a): "
     "every thread that runs Python, one block each, as gdb's thread apply all pyt bt.",
     "pyt bt [--full] [--native] [--locals] [--all]"},
    {Verb::BtFull, "bt-full", "pyt bt --full: the Python stack with every frame's locals.", "pyt bt-full"},
    {Verb::Up, "up", "Select the next older Python frame (and the C frame that evaluates it).", "pyt up [N]"},
    {Verb::Down, "down", "Select the next newer Python frame (and the C frame that evaluates it).", "pyt down [N]"},
    {Verb::Frame, "frame", "Show the selected Python frame, or select Python frame K.", "pyt frame [K]"},
    {Verb::List, "list", "The source around the selected Python frame's line.", "pyt list [START [END]]"},
    {Verb::Locals, "locals", "The selected Python frame's locals, as Python prints them (bounded).", "pyt locals"},
    {Verb::Print, "print", "A name as the selected Python frame sees it: local, then global, then builtin.", "pyt print NAME"},
    {Verb::Tstate, "tstate",
     "What a PyThreadState * is: an address or an expression (tstate, $rdi, a member); none: the selected thread's.",
     "pyt tstate [EXPR]"},
    {Verb::Thread, "thread", "Select the thread that runs a thread state, a Python thread name or an asyncio task.", "pyt thread TARGET"},
};

std::string join(char** arguments) {
    std::string out;
    for (char** a = arguments; a && *a; ++a) out += (out.empty() ? "" : " ") + std::string(*a);
    return out;
}

std::vector<std::string> words(char** arguments) {
    std::vector<std::string> out;
    for (char** a = arguments; a && *a; ++a) out.emplace_back(*a);
    return out;
}

// An option as libpython's verbs spell it (-full) or as GNU does (--full).
bool isOption(const std::string& word, const char* name) { return word == std::string("-") + name || word == std::string("--") + name; }

std::string withNewline(std::string text) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    return text;
}

// A Python frame's line when the view gives none: "#K function (file:line)".
std::string frameLine(const json& frame) {
    if (auto it = frame.find("text"); it != frame.end() && it->is_string()) return withNewline(it->get<std::string>());
    auto str = [&](const char* key) {
        auto it = frame.find(key);
        return it != frame.end() && it->is_string() ? it->get<std::string>() : std::string("?");
    };
    auto num = [&](const char* key) {
        auto it = frame.find(key);
        return it != frame.end() && it->is_number_integer() ? std::to_string(it->get<int64_t>()) : std::string("?");
    };
    return "#" + num("index") + " " + str("function") + " (" + str("file") + ":" + num("line") + ")\n";
}

class PytCommand : public GuardedCommand {
public:
    explicit PytCommand(const VerbInfo& info) : GuardedCommand(std::string("pyt ") + info.name), verb_(info.verb) {}

private:
    struct Stop {
        lldb::SBTarget target;
        lldb::SBProcess process;
        lldb::SBThread thread;
        int lwp = 0;
    };

    bool execute(lldb::SBDebugger debugger, char** arguments, lldb::SBCommandReturnObject& result) override {
        Stop stop;
        stop.target = debugger.GetSelectedTarget();
        stop.process = stop.target.IsValid() ? stop.target.GetProcess() : lldb::SBProcess();
        if (!stop.process.IsValid() || stop.process.GetNumThreads() == 0)
            return fail(result, "no process or core: attach to a process or load a core first (target create --core FILE)");
        stop.thread = stop.process.GetSelectedThread();
        if (!stop.thread.IsValid()) stop.thread = stop.process.GetThreadAtIndex(0);
        stop.lwp = static_cast<int>(stop.thread.GetThreadID());
        std::vector<std::string> args = words(arguments);
        switch (verb_) {
            case Verb::Bt:
            case Verb::BtFull: return bt(stop, args, result);
            case Verb::Up:
            case Verb::Down:
            case Verb::Frame: return move(stop, args, result);
            case Verb::List:
            case Verb::Locals:
            case Verb::Print: return inFrame(stop, args, arguments, result);
            case Verb::Tstate: return tstate(stop, arguments, result);
            case Verb::Thread: return thread(stop, arguments, result);
        }
        return fail(result, "unknown command");
    }

    bool done(lldb::SBCommandReturnObject& result, const std::string& text) {
        result.Printf("%s", withNewline(text).c_str());
        result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
        return true;
    }

    bool asked(Stop& stop, const json& question, lldb::SBCommandReturnObject& result) {
        Answer a = askView(stop.process, question);
        if (!a.ok()) return fail(result, a.error);
        return done(result, a.text());
    }

    bool bt(Stop& stop, const std::vector<std::string>& args, lldb::SBCommandReturnObject& result) {
        bool full = verb_ == Verb::BtFull, native = false, locals = false, all = false;
        for (const auto& a : args) {
            if (isOption(a, "full")) full = true;
            else if (isOption(a, "native")) native = true;
            else if (isOption(a, "locals")) locals = true;
            else if (isOption(a, "all") || a == "-a") all = true;
            else return fail(result, "unknown option " + a + " (pyt bt [--full] [--native] [--locals] [--all])");
        }
        json question{{"ask", "bt"}, {"native", native}, {"locals", locals}, {"full", full}};
        if (!all) return asked(stop, btQuestion(question, stop.thread), result);
        // lldb has no `thread apply all`: every thread whose LWP runs a thread state, in lldb's
        // order, under lldb's thread number (`thread select N`); the others are left out.
        std::string text;
        for (uint32_t i = 0; i < stop.process.GetNumThreads(); ++i) {
            lldb::SBThread thread = stop.process.GetThreadAtIndex(i);
            if (!thread.IsValid()) continue;
            Answer a = askView(stop.process, btQuestion(question, thread));
            if (!a.ok()) continue;
            text += (text.empty() ? "" : "\n") + std::string("thread #") + std::to_string(thread.GetIndexID()) +
                    ": tid = " + std::to_string(thread.GetThreadID()) + "\n" + withNewline(a.text());
        }
        if (text.empty()) {  // the view's own failure (no CPython in the target), else none runs Python
            Answer view = askView(stop.process, {{"ask", "gil-holder"}});
            return fail(result, view.ok() ? "no thread runs Python" : view.error);
        }
        return done(result, text);
    }

    // pyt bt's question for one thread: its LWP, lldb's frame number of each eval frame
    // ("[C #L]") and the Python frame selected ('*').
    json btQuestion(json question, lldb::SBThread thread) {
        int lwp = static_cast<int>(thread.GetThreadID());
        std::vector<uint32_t> evals = evalFrameIndexes(thread);
        question["lwp"] = lwp;
        question["eval_levels"] = evals;
        Answer stack = askView(thread.GetProcess(), {{"ask", "stack"}, {"lwp", lwp}});
        if (stack.ok())
            if (auto it = stack.json.find("frames"); it != stack.json.end() && it->is_array() && !it->empty())
                if (auto k = selectedPythonFrame(thread, *it, evals)) question["selected"] = *k;
        return question;
    }

    // The thread's Python frames and the one selected; false (result failed) when it runs none.
    bool stackOf(Stop& stop, json* frames, size_t* k, std::vector<uint32_t>* evals, lldb::SBCommandReturnObject& result) {
        Answer a = askView(stop.process, {{"ask", "stack"}, {"lwp", stop.lwp}});
        if (!a.ok()) return fail(result, a.error);
        auto it = a.json.find("frames");
        if (it == a.json.end() || !it->is_array() || it->empty()) return fail(result, "LWP " + std::to_string(stop.lwp) + " runs no Python frame");
        *frames = *it;
        *evals = evalFrameIndexes(stop.thread);
        *k = selectedPythonFrame(stop.thread, *frames, *evals).value_or(0);
        return true;
    }

    bool move(Stop& stop, const std::vector<std::string>& args, lldb::SBCommandReturnObject& result) {
        if (args.size() > 1) return fail(result, "takes at most one number");
        uint64_t n = 1;
        bool counted = !args.empty();
        if (counted) {
            auto v = parseNumber(args[0]);
            if (!v) return fail(result, "not a number: " + args[0]);
            n = *v;
        }
        json frames;
        size_t k = 0;
        std::vector<uint32_t> evals;
        if (!stackOf(stop, &frames, &k, &evals, result)) return false;
        size_t target = k;
        if (verb_ == Verb::Frame) {
            if (counted) target = n;
            if (target >= frames.size())
                return fail(result, "no Python frame " + std::to_string(target) + ": the thread runs " + std::to_string(frames.size()));
        } else if (verb_ == Verb::Up) {
            // From a C frame below the one that evaluates frame k, in a call libpython.py counts as
            // a Python frame (take_gil, cfunction_call, ...), the first step up is to frame k itself.
            int64_t g = frames[k].value("eval_group", int64_t{-1});
            bool below = g >= 0 && static_cast<size_t>(g) < evals.size() && inCallFromPython(stop.thread, evals[g]);
            size_t step = below ? (n > 0 ? n - 1 : 0) : n;
            if (!below && k + 1 >= frames.size()) return fail(result, "unable to find an older Python frame");
            target = std::min<size_t>(frames.size() - 1, k + step);
        } else {
            if (k == 0) return fail(result, "unable to find a newer Python frame");
            target = k >= n ? k - n : 0;
        }
        // A bare `pyt frame` shows the selected Python frame and leaves lldb's selection alone.
        bool moves = verb_ != Verb::Frame || counted;
        std::optional<uint32_t> c = moves ? selectPythonFrame(stop.thread, frames, target, evals) : std::optional<uint32_t>(0);
        Answer a = askView(stop.process, {{"ask", "frame"}, {"lwp", stop.lwp}, {"frame", target}, {"eval_levels", evals}});
        std::string text = a.ok() && !a.text().empty() ? withNewline(a.text()) : frameLine(frames[target]);
        if (!c) text += "lldb shows no _PyEval_EvalFrameDefault frame for it: the selected C frame is unchanged\n";
        return done(result, text);
    }

    bool inFrame(Stop& stop, const std::vector<std::string>& args, char** arguments, lldb::SBCommandReturnObject& result) {
        json frames;
        size_t k = 0;
        std::vector<uint32_t> evals;
        if (!stackOf(stop, &frames, &k, &evals, result)) return false;
        if (verb_ == Verb::Locals) {
            if (!args.empty()) return fail(result, "takes no argument");
            return asked(stop, {{"ask", "locals"}, {"lwp", stop.lwp}, {"frame", k}}, result);
        }
        if (verb_ == Verb::Print) {
            std::string name = join(arguments);
            if (name.empty()) return fail(result, "needs a NAME");
            return asked(stop, {{"ask", "print"}, {"lwp", stop.lwp}, {"frame", k}, {"name", name}}, result);
        }
        // list [START [END]] or START,END
        std::vector<std::string> bounds;
        for (const auto& a : args) {
            size_t start = 0;
            while (start <= a.size()) {
                size_t comma = a.find(',', start);
                std::string part = a.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                if (!part.empty()) bounds.push_back(part);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        }
        if (bounds.size() > 2) return fail(result, "pyt list [START [END]]");
        json question{{"ask", "list"}, {"lwp", stop.lwp}, {"frame", k}};
        const char* keys[] = {"start", "end"};
        for (size_t i = 0; i < bounds.size(); ++i) {
            auto v = parseNumber(bounds[i]);
            if (!v) return fail(result, "not a line number: " + bounds[i]);
            question[keys[i]] = *v;
        }
        return asked(stop, question, result);
    }

    bool tstate(Stop& stop, char** arguments, lldb::SBCommandReturnObject& result) {
        std::string expression = join(arguments);
        uint64_t address = 0;
        if (expression.empty()) {
            Answer a = askView(stop.process, {{"ask", "stack"}, {"lwp", stop.lwp}});
            if (!a.ok()) return fail(result, a.error);
            auto it = a.json.find("tstate");
            if (it == a.json.end() || !it->is_number_unsigned()) return fail(result, "LWP " + std::to_string(stop.lwp) + " runs no thread state");
            address = it->get<uint64_t>();
        } else {
            std::string why;
            auto v = addressOf(stop.target, stop.thread.GetSelectedFrame(), expression, &why);
            if (!v) return fail(result, why);
            address = *v;
        }
        return asked(stop, {{"ask", "tstate"}, {"address", address}}, result);
    }

    bool thread(Stop& stop, char** arguments, lldb::SBCommandReturnObject& result) {
        std::string target = join(arguments);
        if (target.empty()) return fail(result, "needs a TARGET: a thread state (address or expression), a Python thread name or an asyncio task");
        Answer a = askView(stop.process, {{"ask", "find-thread"}, {"target", target}});
        if (!a.ok() && !parseNumber(target)) {
            // Not a name the view knows: an expression lldb evaluates (tstate, $rdi), its value asked again.
            std::string why;
            if (auto v = addressOf(stop.target, stop.thread.GetSelectedFrame(), target, &why)) {
                char hex[32];
                snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(*v));
                a = askView(stop.process, {{"ask", "find-thread"}, {"target", hex}});
            }
        }
        if (!a.ok()) return fail(result, a.error);
        auto it = a.json.find("lwp");
        if (it == a.json.end() || !it->is_number_integer()) return fail(result, a.text().empty() ? "no thread runs " + target : a.text());
        uint64_t lwp = it->get<uint64_t>();
        if (!stop.process.SetSelectedThreadByID(lwp)) return fail(result, "lldb has no thread with LWP " + std::to_string(lwp));
        std::string text = a.text();
        lldb::SBStream status;
        stop.process.GetSelectedThread().GetStatus(status);
        text = withNewline(text) + (status.GetData() ? status.GetData() : "");
        return done(result, text);
    }

    Verb verb_;
};

}  // namespace

void addPytCommands(lldb::SBDebugger debugger) {
    lldb::SBCommandInterpreter interpreter = debugger.GetCommandInterpreter();
    lldb::SBCommand pyt = interpreter.AddMultiwordCommand(
        "pyt", "Python frames and thread states of the stop lldb shows (pytstates): pyt bt, up, down, frame, list, locals, print, tstate, "
        "thread; pyt bt --all for every thread");
    // One object per name: lldb owns each (a shared_ptr per command) and deletes it at exit.
    for (const auto& info : kVerbs) {
        if (pyt.IsValid()) pyt.AddCommand(info.name, new PytCommand(info), info.help, info.syntax);
        static std::list<std::string> names;  // lldb may keep the name's pointer: never moved
        names.push_back(std::string("pyt-") + info.name);
        interpreter.AddCommand(names.back().c_str(), new PytCommand(info), info.help, info.syntax);
    }
}

}  // namespace pytstates::lldbfront
