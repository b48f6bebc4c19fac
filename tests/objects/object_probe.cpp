// SPDX-License-Identifier: Apache-2.0
// Test tool: reads objects and frames of a core through ObjectReader and FrameReader and prints
// what it read as one JSON object, for objects_test.py to compare with what the program printed
// about itself and with gdb.
//
// Usage: object_probe [--no-dwarf] CORE [object ADDR]... [global MODULE NAME]... [gen ADDR]...
//   --no-dwarf: the layout from _Py_DebugOffsets and the built-in tables only.
#include <cstdio>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "symbols/core/core_target.h"
#include "symbols/cpython/frames.h"
#include "symbols/cpython/object_reader.h"
#include "symbols/cpython/runtimes.h"
#include "symbols/text/hex_address.h"

using namespace pytstates;
using nlohmann::json;

namespace {
json repr(const ObjectReader& objects, uint64_t object) {
    if (!object) return nullptr;
    auto r = objects.shortRepr(object);
    return r ? json(*r) : json(nullptr);
}

json describeObject(const ObjectReader& objects, uint64_t object) {
    json o;
    o["address"] = hexAddress(object);
    auto type = objects.typeName(object);
    o["type"] = type ? json(*type) : json(nullptr);
    o["repr"] = repr(objects, object);
    if (auto v = objects.integer(object)) o["integer"] = *v;
    if (auto v = objects.floating(object)) o["floating"] = *v;
    if (auto v = objects.boolean(object)) o["boolean"] = *v;
    o["none"] = objects.isNone(object);
    if (auto attrs = objects.attributes(object, 64)) {
        json a = json::object();
        for (const auto& e : *attrs)
            a[readPyUnicode(objects.memory(), objects.layout(), e.key, 64).value_or("?")] = repr(objects, e.value);
        o["attributes"] = a;
    }
    auto items = [&](const char* key, const std::optional<std::vector<uint64_t>>& list) {
        if (!list) return;
        json a = json::array();
        for (uint64_t item : *list) a.push_back(repr(objects, item));
        o[key] = a;
    };
    items("list", objects.listItems(object, 100));
    items("tuple", objects.tupleItems(object, 100));
    items("deque", objects.dequeItems(object, 1000));
    items("set", objects.setItems(object, 100));
    if (type && (*type == "dict")) {
        if (auto d = objects.dictItems(object, 100)) {
            json a = json::array();
            for (const auto& e : *d) a.push_back({repr(objects, e.key), repr(objects, e.value)});
            o["dict"] = a;
        }
    }
    return o;
}
}  // namespace

int main(int argc, char** argv) try {
    bool useDwarf = true;
    if (argc > 1 && std::string(argv[1]) == "--no-dwarf") {
        useDwarf = false;
        ++argv;
        --argc;
    }
    if (argc < 2) {
        std::fprintf(stderr, "usage: object_probe CORE [object ADDR]... [global MODULE NAME]... [gen ADDR]...\n");
        return 2;
    }
    CoreOptions options;
    options.corePath = argv[1];
    CoreTarget target(options);
    RuntimeSearch search = walkRuntimes(target, findRuntimeCandidates(target, useDwarf));
    if (search.runtimes.empty() || search.runtimes[0].interpreters.empty()) {
        std::fprintf(stderr, "object_probe: no CPython runtime in the core\n");
        return 2;
    }
    const Runtime& runtime = search.runtimes[0];
    const CPythonLayout& layout = runtime.layout;
    ObjectReader objects(target, layout);
    FrameReader frames(target, layout);
    json out;
    out["version"] = runtime.version;
    out["layout_source"] = layout.source;
    const Interpreter& interp = runtime.interpreters[0];
    json threads = json::array();
    for (const auto& ts : interp.tstates) {
        json t;
        t["native_thread_id"] = ts.nativeThreadId ? json(*ts.nativeThreadId) : json(nullptr);
        json fs = json::array();
        for (const auto& f : ts.frames) {
            json fj;
            fj["function"] = f.function;
            fj["line"] = f.line;
            fj["instruction_offset"] = f.instructionOffset;
            fj["code"] = hexAddress(f.code);
            json locals = json::array();
            for (const auto& l : frames.locals(f.address)) {
                auto type = l.value ? objects.typeName(l.value) : std::nullopt;
                locals.push_back({{"name", l.name}, {"kind", l.kind}, {"address", l.value ? json(hexAddress(l.value)) : json(nullptr)},
                                  {"type", type ? json(*type) : json(nullptr)}, {"repr", repr(objects, l.value)}});
            }
            fj["locals"] = locals;
            json stack = json::array();
            for (uint64_t v : frames.valueStack(f.address, 16)) stack.push_back(v ? json(hexAddress(v)) : json(nullptr));
            fj["value_stack"] = stack;
            json blocks = json::array();
            for (const auto& b : frames.blockStack(f.address)) blocks.push_back({b.type, b.handler, b.level});
            fj["blocks"] = blocks;
            if (auto table = frames.exceptionTable(f.code)) fj["exception_table_size"] = table->size();
            fj["globals"] = hexAddress(frames.globals(f.address));
            fs.push_back(fj);
        }
        t["frames"] = fs;
        threads.push_back(t);
    }
    out["threads"] = threads;
    uint64_t sysdict = target.readPointer(interp.address + layout.interpSysdict).value_or(0);
    json objs = json::object(), globals = json::object(), gens = json::object();
    for (int i = 2; i < argc; ++i) {
        std::string cmd = argv[i];
        if (cmd == "object" && i + 1 < argc) {
            uint64_t a = std::stoull(argv[++i], nullptr, 0);
            objs[hexAddress(a)] = describeObject(objects, a);
        } else if (cmd == "global" && i + 2 < argc) {
            std::string module = argv[++i], name = argv[++i];
            auto v = objects.moduleGlobal(sysdict, module, name);
            globals[module + "." + name] = v ? json(hexAddress(*v)) : json(nullptr);
        } else if (cmd == "gen" && i + 1 < argc) {
            uint64_t a = std::stoull(argv[++i], nullptr, 0);
            json g;
            uint64_t frame = frames.generatorFrame(a);
            g["frame"] = frame ? json(hexAddress(frame)) : json(nullptr);
            if (frame) {
                auto fr = frames.readFrom(frame, 1, nullptr);
                if (!fr.empty()) {
                    g["function"] = fr[0].function;
                    g["line"] = fr[0].line;
                    json locals = json::object();
                    for (const auto& l : frames.locals(frame)) locals[l.name] = repr(objects, l.value);
                    g["locals"] = locals;
                }
            }
            if (frame) {
                json stack = json::array();
                for (uint64_t v : frames.valueStack(frame, 16)) stack.push_back(v ? json(hexAddress(v)) : json(nullptr));
                g["value_stack"] = stack;
                g["state"] = layout.genFrameState != kAbsent ? json(target.readValue<int8_t>(a + layout.genFrameState).value_or(-99)) : json(nullptr);
            }
            uint64_t yf = frames.yieldFrom(a);
            g["yield_from"] = yf ? json(hexAddress(yf)) : json(nullptr);
            gens[hexAddress(a)] = g;
        } else {
            std::fprintf(stderr, "object_probe: unknown argument '%s'\n", cmd.c_str());
            return 2;
        }
    }
    out["objects"] = objs;
    out["globals"] = globals;
    out["generators"] = gens;
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "object_probe: %s\n", e.what());
    return 2;
}
