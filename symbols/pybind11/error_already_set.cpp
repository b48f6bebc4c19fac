// SPDX-License-Identifier: Apache-2.0
#include "symbols/pybind11/error_already_set.h"

#include "symbols/cpython/python_objects.h"

namespace pytstates {

namespace {

constexpr uint64_t kFetched = 8;          // error_already_set: after std::exception's vtable pointer
constexpr uint64_t kValue = 8;            // error_fetch_and_normalize::m_value
constexpr uint64_t kLazyString = 24;      // m_lazy_error_string (std::string: pointer, length, ...)
constexpr uint64_t kLazyCompleted = 56;   // m_lazy_error_string_completed
constexpr uint64_t kExceptionArgs = 24;   // PyBaseExceptionObject.args, after PyObject_HEAD and dict
constexpr uint64_t kTupleSize = 16, kTupleItems = 24;
constexpr size_t kMaxMessage = 4096;

}  // namespace

std::optional<PythonErrorText> readErrorAlreadySet(const Memory& memory, const CPythonLayout& layout, uint64_t object) {
    auto fetched = memory.readPointer(object + kFetched);
    if (!fetched || !*fetched) return std::nullopt;
    auto value = memory.readPointer(*fetched + kValue);
    if (!value || !*value) return std::nullopt;
    auto type = readPlausibleTypeName(memory, layout, *value);
    if (!type) return std::nullopt;
    PythonErrorText out;
    out.type = *type;
    // what() already built: "ValueError: bad value 42" and the traceback's last lines.
    auto completed = memory.readValue<uint8_t>(*fetched + kLazyCompleted);
    auto chars = memory.readPointer(*fetched + kLazyString);
    auto length = memory.readValue<uint64_t>(*fetched + kLazyString + 8);
    if (completed && *completed == 1 && chars && length && *length > 0 && *length < kMaxMessage) {
        std::string text(*length, '\0');
        if (memory.readExact(*chars, text.data(), text.size())) {
            out.message = text.substr(0, text.find('\n'));
            return out;
        }
    }
    // Not built yet: the class and the exception's one str argument, as str(e) gives it.
    out.message = out.type;
    if (layout.freeThreaded) return out;
    auto args = memory.readPointer(*value + kExceptionArgs);
    auto size = args ? memory.readValue<int64_t>(*args + kTupleSize) : std::nullopt;
    if (size && *size == 1)
        if (auto first = memory.readPointer(*args + kTupleItems))
            if (auto text = readPyUnicode(memory, layout, *first, kMaxMessage)) out.message += ": " + *text;
    return out;
}

}  // namespace pytstates
