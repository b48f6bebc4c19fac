// SPDX-License-Identifier: Apache-2.0
#include "plugin/lldb/lldb_python_note.h"

#include <glob.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace pytstates::lldbfront {

namespace {

bool hasEmbeddedInterpreter(const std::string& dir) {
    return !dir.empty() && access((dir + "/lldb/embedded_interpreter.py").c_str(), R_OK) == 0;
}

std::string firstMatch(const std::string& pattern) {
    glob_t found{};
    std::string dir;
    if (glob(pattern.c_str(), 0, nullptr, &found) == 0 && found.gl_pathc > 0) {
        dir = found.gl_pathv[0];
        dir = dir.substr(0, dir.size() - std::string("/lldb/embedded_interpreter.py").size());
    }
    globfree(&found);
    return dir;
}

// Where this lldb's own lldb module lies: its LLVM tree's lib/python3.X/dist-packages (Debian:
// /usr/lib/llvm-N, whose lib/ links to liblldb in the multiarch directory).
std::string lldbModuleDir() {
    const char* version = lldb::SBDebugger::GetVersionString();  // "lldb version 14.0.6 ..."
    std::string text = version ? version : "";
    size_t digit = text.find_first_of("0123456789");
    if (digit == std::string::npos) return "";
    std::string major = text.substr(digit, text.find_first_not_of("0123456789", digit) - digit);
    return firstMatch("/usr/lib/llvm-" + major + "/lib/python3*/dist-packages/lldb/embedded_interpreter.py");
}

}  // namespace

std::string brokenPythonNote() {
    char path[4096] = "";
    lldb::SBFileSpec python = lldb::SBHostOS::GetLLDBPythonPath();
    if (!python.IsValid() || python.GetPath(path, sizeof path) == 0) return "";  // an lldb without Python
    if (hasEmbeddedInterpreter(path)) return "";
    // PYTHONPATH may name the right directory (Debian: /usr/lib/llvm-14/lib/python3.11/dist-packages).
    const char* env = std::getenv("PYTHONPATH");
    std::string list = env ? env : "";
    for (size_t start = 0; start <= list.size();) {
        size_t colon = list.find(':', start);
        std::string dir = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        if (hasEmbeddedInterpreter(dir)) return "";
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    std::string fix = lldbModuleDir();
    return std::string("pytstates: the ModuleNotFoundError (lldb.embedded_interpreter) and NameError (run_one_line) tracebacks are "
                       "this lldb's own, not pytstates': its Python looks for its lldb module in ") +
           path + ", where there is none (Debian's lldb-14 as shipped); the pytstates plugin does not need it." +
           (fix.empty() ? std::string() : " PYTHONPATH=" + fix + " repairs lldb's Python.") + "\n";
}

}  // namespace pytstates::lldbfront
