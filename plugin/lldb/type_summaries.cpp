// SPDX-License-Identifier: Apache-2.0
// lldb's summaries of PyThreadState *, PyInterpreterState * and PyObject * (category "pytstates"):
// what the view of the current stop says of the address, so that `frame variable`, `bt`'s
// arguments and `print` show `tstate=0x00007ffff0000b70 <stale: in no interpreter's list; ...>`.
// A summary never fails loudly: no process, no CPython, NULL or an unreadable answer leave
// lldb's own display as it is.
#include <string>

#include <nlohmann/json.hpp>

#include "plugin/lldb/pyt_commands.h"
#include "plugin/lldb/stop_view.h"

namespace pytstates::lldbfront {

namespace {

bool summarise(lldb::SBValue& value, lldb::SBStream& out, const char* ask) {
    try {
        lldb::SBError error;
        uint64_t address = value.GetValueAsUnsigned(error, 0);
        if (error.Fail() || address == 0) return false;
        lldb::SBProcess process = value.GetProcess();
        if (!process.IsValid()) return false;
        Answer a = askView(process, {{"ask", ask}, {"address", address}});
        if (!a.ok()) return false;
        std::string text;
        if (auto it = a.json.find("summary"); it != a.json.end() && it->is_string()) {
            text = it->get<std::string>();
        } else {
            auto type = a.json.find("type"), repr = a.json.find("repr");
            if (repr != a.json.end() && repr->is_string()) text = repr->get<std::string>();
            else if (type != a.json.end() && type->is_string()) text = "<" + type->get<std::string>() + ">";
        }
        if (text.empty()) return false;
        // The value hidden (lldb's bt shows an argument's summary instead of its value): the
        // address first, as lldb prints a pointer, then the view's words.
        // An object's repr as Python prints it ("(2,)", "<module object at ...>"); a thread
        // state's or interpreter's words in <...>.
        bool object = std::string(ask) == "object";
        out.Printf(object ? "0x%016llx %s" : "0x%016llx <%s>", static_cast<unsigned long long>(address), text.c_str());
        return true;
    } catch (...) {
        return false;
    }
}

bool tstateSummary(lldb::SBValue value, lldb::SBTypeSummaryOptions, lldb::SBStream& out) { return summarise(value, out, "tstate"); }
bool interpreterSummary(lldb::SBValue value, lldb::SBTypeSummaryOptions, lldb::SBStream& out) {
    return summarise(value, out, "interpreter");
}
bool objectSummary(lldb::SBValue value, lldb::SBTypeSummaryOptions, lldb::SBStream& out) { return summarise(value, out, "object"); }

}  // namespace

void addTypeSummaries(lldb::SBDebugger debugger) {
    lldb::SBTypeCategory category = debugger.GetCategory("pytstates");
    if (!category.IsValid()) category = debugger.CreateCategory("pytstates");
    if (!category.IsValid()) return;
    struct Entry {
        const char* regex;  // the typedef and the struct it names, as lldb spells each
        lldb::SBTypeSummary::FormatCallback callback;
        const char* description;
    };
    const Entry entries[] = {
        {"^(PyThreadState|(struct )?_ts) \\*$", tstateSummary, "pytstates: what this thread state is"},
        {"^(PyInterpreterState|(struct )?_is) \\*$", interpreterSummary, "pytstates: which interpreter"},
        {"^(PyObject|(struct )?_object) \\*$", objectSummary, "pytstates: the object as Python prints it"},
    };
    for (const auto& e : entries) {
        lldb::SBTypeSummary summary = lldb::SBTypeSummary::CreateWithCallback(e.callback, lldb::eTypeOptionCascade | lldb::eTypeOptionHideValue, e.description);
        category.AddTypeSummary(lldb::SBTypeNameSpecifier(e.regex, true), summary);
    }
    category.SetEnabled(true);
}

}  // namespace pytstates::lldbfront
