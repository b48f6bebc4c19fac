// SPDX-License-Identifier: Apache-2.0
#include "plugin/lldb/value_address.h"

#include <cerrno>
#include <cstdlib>

namespace pytstates::lldbfront {

namespace {

std::optional<uint64_t> valueAddress(lldb::SBValue value, std::string* why) {
    if (!value.IsValid()) return std::nullopt;
    lldb::SBError error = value.GetError();
    if (error.Fail()) {
        if (why && error.GetCString()) *why = error.GetCString();
        return std::nullopt;
    }
    lldb::SBType type = value.GetType().GetCanonicalType();
    lldb::TypeClass kind = type.GetTypeClass();
    if (kind == lldb::eTypeClassStruct || kind == lldb::eTypeClassUnion || kind == lldb::eTypeClassClass) {
        lldb::addr_t at = value.GetLoadAddress();
        if (at == LLDB_INVALID_ADDRESS) {
            if (why) *why = "it has no address in the target";
            return std::nullopt;
        }
        return at;
    }
    lldb::SBError read;
    uint64_t v = value.GetValueAsUnsigned(read, 0);
    if (read.Fail()) {
        if (why) *why = read.GetCString() ? read.GetCString() : "its value cannot be read";
        return std::nullopt;
    }
    return v;
}

}  // namespace

std::optional<uint64_t> parseNumber(const std::string& text) {
    if (text.empty() || text[0] == '-' || text[0] == '+') return std::nullopt;
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(text.c_str(), &end, 0);
    if (errno != 0 || !end || *end != '\0') return std::nullopt;
    return v;
}

std::optional<uint64_t> addressOf(lldb::SBTarget target, lldb::SBFrame frame, const std::string& expression, std::string* why) {
    if (auto n = parseNumber(expression)) return n;
    if (frame.IsValid()) {
        if (auto v = valueAddress(frame.GetValueForVariablePath(expression.c_str()), nullptr)) return v;
        if (expression.size() > 1 && expression[0] == '$')
            if (auto v = valueAddress(frame.FindRegister(expression.c_str() + 1), nullptr)) return v;
    }
    lldb::SBExpressionOptions options;
    options.SetUnwindOnError(true);
    options.SetIgnoreBreakpoints(true);
    options.SetTryAllThreads(false);
    lldb::SBValue value = frame.IsValid() ? frame.EvaluateExpression(expression.c_str(), options)
                                          : target.EvaluateExpression(expression.c_str(), options);
    std::string reason;
    if (auto v = valueAddress(value, &reason)) return v;
    if (why) {
        // lldb's lines ("expression failed to parse:", "error: <user expression 0>:1:1: ...") as one.
        std::string line;
        for (size_t start = 0; start < reason.size();) {
            size_t nl = reason.find('\n', start);
            std::string part = reason.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
            start = nl == std::string::npos ? reason.size() : nl + 1;
            if (part.rfind("error: ", 0) == 0) part = part.substr(7);
            else if (!line.empty()) continue;  // the expression and a caret under it
            while (!part.empty() && (part.back() == ' ' || part.back() == '\r')) part.pop_back();
            if (part.empty()) continue;
            line += (line.empty() ? "" : " ") + part;
        }
        reason = line;
        *why = "lldb cannot evaluate " + expression + (reason.empty() ? "" : ": " + reason);
    }
    return std::nullopt;
}

}  // namespace pytstates::lldbfront
