// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/thread_names.h"

#include "symbols/cpython/object_reader.h"

namespace pytstates {

namespace {

// One Thread object's name and ids, into `out`; false when it does not read as a Thread.
bool addThread(const ObjectReader& reader, uint64_t thread, std::optional<int64_t> identKey, PythonThreadNames& out) {
    auto nameObject = reader.attribute(thread, "_name");
    if (!nameObject) return false;
    auto name = reader.str(*nameObject, 256);
    if (!name) return false;
    std::optional<int64_t> ident = identKey;
    if (!ident)
        if (auto i = reader.attribute(thread, "_ident")) ident = reader.integer(*i);
    if (ident && *ident) out.byIdent[static_cast<uint64_t>(*ident)] = *name;
    if (auto n = reader.attribute(thread, "_native_id"))
        if (auto id = reader.integer(*n); id && *id > 0)
            out.byNativeId[*id] = {*name, ident ? static_cast<uint64_t>(*ident) : 0};
    return true;
}

}  // namespace

std::optional<int64_t> readSmallPyLong(const Memory& memory, const CPythonLayout& layout, uint64_t object) {
    return ObjectReader(memory, layout).integer(object);
}

PythonThreadNames readPythonThreadNames(const Target& target, const Runtime& runtime, const Interpreter& interp,
                                        size_t maxThreads) {
    PythonThreadNames out;
    const CPythonLayout& layout = runtime.layout;
    if (layout.interpSysdict == kAbsent) {
        out.note = "the interpreter's sys dict is not in the layout";
        return out;
    }
    uint64_t sysdict = target.readPointer(interp.address + static_cast<uint64_t>(layout.interpSysdict)).value_or(0);
    ObjectReader reader(target, layout);
    auto active = reader.moduleGlobal(sysdict, "threading", "_active");
    if (!active) {
        out.note = "no threading module (or its _active registry is unreadable)";
        return out;
    }
    auto entries = reader.dictItems(*active, maxThreads);
    if (!entries) {
        out.note = "threading._active is unreadable";
        return out;
    }
    for (const auto& e : *entries) addThread(reader, e.value, reader.integer(e.key), out);
    if (auto main = reader.moduleGlobal(sysdict, "threading", "_main_thread")) {
        if (auto i = reader.attribute(*main, "_ident"))
            if (auto ident = reader.integer(*i); ident && *ident) out.mainIdent = static_cast<uint64_t>(*ident);
        if (auto n = reader.attribute(*main, "_native_id"))
            if (auto id = reader.integer(*n); id && *id > 0) out.mainNativeId = *id;
    }
    // Started, not yet in _active: the new thread registers itself in _bootstrap_inner; its
    // ident is set by then (3.8-3.12: _set_ident first; 3.13+: start() sets it).
    if (auto limbo = reader.moduleGlobal(sysdict, "threading", "_limbo"))
        if (auto started = reader.dictItems(*limbo, maxThreads))
            for (const auto& e : *started) addThread(reader, e.value, std::nullopt, out);
    return out;
}

}  // namespace pytstates
