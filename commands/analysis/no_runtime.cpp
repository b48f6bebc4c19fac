// SPDX-License-Identifier: Apache-2.0
#include "commands/analysis/no_runtime.h"

#include <regex>

#include "symbols/modules/module_files.h"

namespace pytstates {

namespace {

// libpython3.X.so, or a python3.X executable (Debian links CPython into it).
bool looksLikePython(const std::string& path) {
    static const std::regex name(R"((^|/)(libpython3\.\d+[a-z]*\.so[.\d]*|python3(\.\d+)?[a-z]*)$)");
    return std::regex_search(path, name);
}

std::string filesHelp(const Target& target) {
    return target.kind() == TargetKind::Core
               ? "pass --sysroot DIR holding the target's files (a core from another machine or a container), or set "
                 "DEBUGINFOD_URLS so that pytstates fetches them by build-id"
               : "set DEBUGINFOD_URLS so that pytstates fetches them by build-id";
}

}  // namespace

namespace {

// *notPython: nothing names CPython (its conclusion is the caller's to draw); *mappedPython: the
// mapped file that names it where no loaded module does.
std::string explainWhy(const Target& target, const std::vector<std::string>& rejected, bool* notPython, std::string* mappedPython) {
    const std::string head = "no initialised CPython runtime in the target: ";
    if (!rejected.empty()) {
        const std::string& why = rejected.front();
        std::string help;
        if (why.find("is not supported") != std::string::npos)
            help = "; install its debug files (Debian: the python3.X-dbg package of that version; or pass --debug-dir DIR), or set "
                   "DEBUGINFOD_URLS, so that its layout comes from DWARF";
        else if (why.find("version is unknown") != std::string::npos)
            help = "; the memory of _PyRuntime holds no CPython version: is the core truncated, or the module's file another build?";
        std::string more = rejected.size() > 1 ? " (and " + std::to_string(rejected.size() - 1) + " more)" : "";
        return head + why + more + help;
    }
    size_t unreadable = 0;
    const LoadedModule* firstUnreadable = nullptr;
    for (const auto& m : target.modules()) {
        if (m.path.empty() || m.path[0] != '/') continue;
        if (!m.elf) {
            ++unreadable;
            if (!firstUnreadable) firstUnreadable = &m;
        }
        if (!looksLikePython(m.path)) continue;
        if (!m.elf)
            return head + m.path + " is loaded but its file cannot be read (" + m.problem + "), so _PyRuntime cannot be found; " +
                   filesHelp(target) + (m.buildIdInTarget.empty() ? "" : " (" + m.buildIdInTarget + ")");
        if (!findModuleSymbol(m, "_PyRuntime"))
            return head + m.path + " is loaded but defines no _PyRuntime symbol (stripped of its dynamic symbols, or a CPython "
                                   "older than 3.7); its debug file would give it: install it or pass --debug-dir DIR";
    }
    if (firstUnreadable) {
        // Debian's python3.X has CPython linked in: a program moved since the core was written.
        bool exeUnreadable = false;
        for (const auto& m : target.modules())
            if (!m.elf && !m.path.empty() && m.path == target.executable()) exeUnreadable = true;
        return head + "no module defines _PyRuntime, and the files of " + std::to_string(unreadable) + " module" +
               (unreadable == 1 ? "" : "s") + " cannot be read (" + firstUnreadable->path + ": " + firstUnreadable->problem +
               "); if CPython is linked into one of them, " +
               (exeUnreadable ? "give the program's file with --exe FILE if it was moved or rebuilt, or " : "") + filesHelp(target);
    }
    size_t looked = target.modules().size();
    std::string none = "no loaded module defines _PyRuntime (" + std::to_string(looked) + (looked == 1 ? " module" : " modules") + " looked at)";
    // The link map names no CPython; the core's own list of mapped files (NT_FILE) may, where the
    // link map is gone with the memory it lives in.
    for (const auto& path : target.mappedFilePaths())
        if (looksLikePython(path)) {
            *mappedPython = path;
            return head + "CPython was loaded (the core's mapped files name " + path + "), but " + none;
        }
    *notPython = true;
    return head + none;
}

}  // namespace

NoRuntime explainNoRuntime(const Target& target, const std::vector<std::string>& rejected) {
    NoRuntime r;
    std::string mappedPython;
    r.why = explainWhy(target, rejected, &r.notPython, &mappedPython);
    for (const auto& w : target.warnings())
        if (w.find("truncated") != std::string::npos) {
            r.truncated = true;
            r.notPython = false;  // what is cut off may be CPython: nothing says it is not there
            if (!mappedPython.empty()) {
                // CPython was there: its memory, or the link map naming it, is what is missing.
                r.why = w + ": CPython was loaded (the core's mapped files name " + mappedPython +
                        ") but its memory is cut off, so no CPython runtime can be read from what the core holds "
                        "(the link map naming its module, or _PyRuntime itself, is in the part cut off)";
            } else {
                // What is missing may be the runtime itself, or the link map that names its module.
                r.why = w + ", so no CPython runtime could be found in what it holds (the runtime's memory, or the link map "
                        "naming its module, may be in the part cut off); from what it holds: " + r.why;
            }
            break;
        }
    if (r.notPython) r.why += ": the process does not run CPython";
    return r;
}

}  // namespace pytstates
