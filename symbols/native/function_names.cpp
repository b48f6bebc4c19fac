// SPDX-License-Identifier: Apache-2.0
#include "symbols/native/function_names.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace pytstates {

namespace {

// Index of the '(' that opens the parameter list of a demangled function name: the last '(' at
// template and parenthesis depth 0 ("f<int (*)(int)>(int)" -> the one after '>').
size_t parameterListStart(const std::string& d) {
    int angle = 0, paren = 0;
    size_t found = std::string::npos;
    for (size_t i = 0; i < d.size(); ++i) {
        char c = d[i];
        if (c == '<') ++angle;
        else if (c == '>' && angle > 0) --angle;
        else if (c == '(') {
            if (angle == 0 && paren == 0) found = i;
            ++paren;
        } else if (c == ')' && paren > 0) --paren;
    }
    // "operator()(int)": the list starts after "operator()".
    if (found != std::string::npos && d.compare(found, 2, "()") == 0 && found >= 8 && d.compare(found - 8, 8, "operator") == 0)
        return d.find('(', found + 2);
    return found;
}

}  // namespace

std::string functionName(const std::string& versioned) {
    // A versioned .symtab name ("clock_nanosleep@@GLIBC_2.17"): the function is the part before.
    std::string symbol = versioned.substr(0, versioned.find('@'));
    if (symbol.rfind("_Z", 0) != 0) return symbol;
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
    if (status != 0 || !out) return symbol;
    std::string d = out.get();
    size_t open = parameterListStart(d);
    if (open == std::string::npos || open == 0) return d;
    std::string name = d.substr(0, open);
    // Template functions demangle with their return type first ("void f<int>"): drop it, the last
    // space at template depth 0 before the name.
    int angle = 0, paren = 0;
    size_t space = std::string::npos;
    for (size_t i = 0; i < name.size(); ++i) {
        if (name[i] == '<') ++angle;
        else if (name[i] == '>' && angle > 0) --angle;
        else if (name[i] == '(') ++paren;
        else if (name[i] == ')' && paren > 0) --paren;
        else if (name[i] == ' ' && angle == 0 && paren == 0 && name.compare(i + 1, 8, "operator") != 0 &&
                 !(i >= 8 && name.compare(i - 8, 8, "operator") == 0))
            space = i;
    }
    return space == std::string::npos ? name : name.substr(space + 1);
}

}  // namespace pytstates
