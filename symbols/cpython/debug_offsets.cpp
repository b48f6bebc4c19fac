// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/debug_offsets.h"

#include <cstring>
#include <map>
#include <vector>

namespace pytstates {

namespace {

// Each struct inside _Py_DebugOffsets with its fields in order, every field a uint64_t (the
// cookie is 8 bytes too): Include/internal/pycore_runtime.h of 3.13, pycore_debug_offsets.h of
// 3.14 and 3.15.
struct Group {
    const char* name;
    std::vector<const char*> fields;
};

const std::vector<Group> k313 = {
    {"", {"cookie", "version", "free_threaded"}},
    {"runtime_state", {"size", "finalizing", "interpreters_head"}},
    {"interpreter_state", {"size", "id", "next", "threads_head", "gc", "imports_modules", "sysdict",
         "builtins", "ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
         "gil_runtime_state_locked", "gil_runtime_state_holder"}},
    {"thread_state", {"size", "prev", "next", "interp", "current_frame", "thread_id", "native_thread_id",
         "datastack_chunk", "status"}},
    {"interpreter_frame", {"size", "previous", "executable", "instr_ptr", "localsplus", "owner"}},
    {"code_object", {"size", "filename", "name", "qualname", "linetable", "firstlineno", "argcount",
         "localsplusnames", "localspluskinds", "co_code_adaptive"}},
    {"pyobject", {"size", "ob_type"}},
    {"type_object", {"size", "tp_name", "tp_repr", "tp_flags"}},
    {"tuple_object", {"size", "ob_item", "ob_size"}},
    {"list_object", {"size", "ob_item", "ob_size"}},
    {"dict_object", {"size", "ma_keys", "ma_values"}},
    {"float_object", {"size", "ob_fval"}},
    {"long_object", {"size", "lv_tag", "ob_digit"}},
    {"bytes_object", {"size", "ob_size", "ob_sval"}},
    {"unicode_object", {"size", "state", "length", "asciiobject_size"}},
    {"gc", {"size", "collecting"}},
};
const std::vector<Group> k314 = {
    {"", {"cookie", "version", "free_threaded"}},
    {"runtime_state", {"size", "finalizing", "interpreters_head"}},
    {"interpreter_state", {"size", "id", "next", "threads_head", "threads_main", "gc", "imports_modules",
         "sysdict", "builtins", "ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
         "gil_runtime_state_locked", "gil_runtime_state_holder", "code_object_generation",
         "tlbc_generation"}},
    {"thread_state", {"size", "prev", "next", "interp", "current_frame", "thread_id", "native_thread_id",
         "datastack_chunk", "status"}},
    {"interpreter_frame", {"size", "previous", "executable", "instr_ptr", "localsplus", "owner",
         "stackpointer", "tlbc_index"}},
    {"code_object", {"size", "filename", "name", "qualname", "linetable", "firstlineno", "argcount",
         "localsplusnames", "localspluskinds", "co_code_adaptive", "co_tlbc"}},
    {"pyobject", {"size", "ob_type"}},
    {"type_object", {"size", "tp_name", "tp_repr", "tp_flags"}},
    {"tuple_object", {"size", "ob_item", "ob_size"}},
    {"list_object", {"size", "ob_item", "ob_size"}},
    {"set_object", {"size", "used", "table", "mask"}},
    {"dict_object", {"size", "ma_keys", "ma_values"}},
    {"float_object", {"size", "ob_fval"}},
    {"long_object", {"size", "lv_tag", "ob_digit"}},
    {"bytes_object", {"size", "ob_size", "ob_sval"}},
    {"unicode_object", {"size", "state", "length", "asciiobject_size"}},
    {"gc", {"size", "collecting"}},
    {"gen_object", {"size", "gi_name", "gi_iframe", "gi_frame_state"}},
    {"llist_node", {"next", "prev"}},
    {"debugger_support", {"eval_breaker", "remote_debugger_support", "remote_debugging_enabled",
         "debugger_pending_call", "debugger_script_path", "debugger_script_path_size"}},
};
const std::vector<Group> k315 = {
    {"", {"cookie", "version", "free_threaded"}},
    {"runtime_state", {"size", "finalizing", "interpreters_head"}},
    {"interpreter_state", {"size", "id", "next", "threads_head", "threads_main", "gc", "imports_modules",
         "sysdict", "builtins", "ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
         "gil_runtime_state_locked", "gil_runtime_state_holder", "code_object_generation",
         "tlbc_generation"}},
    {"thread_state", {"size", "prev", "next", "interp", "current_frame", "base_frame", "last_profiled_frame",
         "last_profiled_frame_seq", "thread_id", "native_thread_id", "datastack_chunk", "status", "holds_gil",
         "gil_requested", "current_exception", "exc_state"}},
    {"err_stackitem", {"exc_value"}},
    {"interpreter_frame", {"size", "previous", "executable", "instr_ptr", "localsplus", "owner",
         "stackpointer", "tlbc_index"}},
    {"code_object", {"size", "filename", "name", "qualname", "linetable", "firstlineno", "argcount",
         "localsplusnames", "localspluskinds", "co_code_adaptive", "co_tlbc"}},
    {"pyobject", {"size", "ob_type"}},
    {"type_object", {"size", "tp_name", "tp_repr", "tp_flags", "tp_basicsize", "tp_dictoffset"}},
    {"heap_type_object", {"size", "ht_cached_keys"}},
    {"tuple_object", {"size", "ob_item", "ob_size"}},
    {"list_object", {"size", "ob_item", "ob_size"}},
    {"set_object", {"size", "used", "table", "mask"}},
    {"dict_object", {"size", "ma_keys", "ma_values"}},
    {"float_object", {"size", "ob_fval"}},
    {"long_object", {"size", "lv_tag", "ob_digit"}},
    {"bytes_object", {"size", "ob_size", "ob_sval"}},
    {"unicode_object", {"size", "state", "length", "asciiobject_size", "compactunicodeobject_size"}},
    {"gc", {"size", "collecting", "frame", "generation_stats_size", "generation_stats"}},
    {"gen_object", {"size", "gi_name", "gi_iframe", "gi_frame_state"}},
    {"llist_node", {"next", "prev"}},
    {"debugger_support", {"eval_breaker", "remote_debugger_support", "remote_debugging_enabled",
         "debugger_pending_call", "debugger_script_path", "debugger_script_path_size"}},
};

// "thread_state.prev" -> its offset inside _Py_DebugOffsets.
std::map<std::string, size_t> positions(const std::vector<Group>& groups) {
    std::map<std::string, size_t> out;
    size_t at = 0;
    for (const auto& g : groups)
        for (const char* f : g.fields) {
            out[*g.name ? std::string(g.name) + "." + f : f] = at;
            at += 8;
        }
    out["<size>"] = at;
    return out;
}

const std::map<std::string, size_t>& shapeOf(int minor) {
    static const auto s13 = positions(k313), s14 = positions(k314), s15 = positions(k315);
    return minor == 13 ? s13 : minor == 14 ? s14 : s15;
}

// Which CPythonLayout field each published offset is.
struct Published {
    const char* name;
    int64_t CPythonLayout::*field;
};
const Published kPublished[] = {
    {"runtime_state.interpreters_head", &CPythonLayout::runtimeInterpretersHead},
    {"interpreter_state.size", &CPythonLayout::interpSize},
    {"interpreter_state.id", &CPythonLayout::interpId},
    {"interpreter_state.next", &CPythonLayout::interpNext},
    {"interpreter_state.threads_head", &CPythonLayout::interpThreadsHead},
    {"interpreter_state.sysdict", &CPythonLayout::interpSysdict},
    {"interpreter_state.builtins", &CPythonLayout::interpBuiltins},
    {"interpreter_state.ceval_gil", &CPythonLayout::interpCevalGil},
    {"thread_state.prev", &CPythonLayout::tstatePrev},
    {"thread_state.next", &CPythonLayout::tstateNext},
    {"thread_state.interp", &CPythonLayout::tstateInterp},
    {"thread_state.current_frame", &CPythonLayout::tstateCurrentFrame},
    {"thread_state.thread_id", &CPythonLayout::tstateThreadId},
    {"thread_state.native_thread_id", &CPythonLayout::tstateNativeThreadId},
    {"interpreter_frame.previous", &CPythonLayout::framePrevious},
    {"interpreter_frame.executable", &CPythonLayout::frameCode},
    {"interpreter_frame.instr_ptr", &CPythonLayout::frameInstr},
    {"interpreter_frame.owner", &CPythonLayout::frameOwner},
    {"code_object.filename", &CPythonLayout::codeFilename},
    {"code_object.name", &CPythonLayout::codeName},
    {"code_object.linetable", &CPythonLayout::codeLineTable},
    {"code_object.firstlineno", &CPythonLayout::codeFirstLineno},
    {"code_object.co_code_adaptive", &CPythonLayout::codeCodeAdaptive},
    {"pyobject.ob_type", &CPythonLayout::objectType},
    {"type_object.tp_name", &CPythonLayout::typeName},
    {"dict_object.ma_keys", &CPythonLayout::dictKeys},
    {"dict_object.ma_values", &CPythonLayout::dictValues},
    {"bytes_object.ob_size", &CPythonLayout::bytesSize},
    {"bytes_object.ob_sval", &CPythonLayout::bytesData},
    {"unicode_object.state", &CPythonLayout::unicodeState},
    {"unicode_object.length", &CPythonLayout::unicodeLength},
    {"unicode_object.asciiobject_size", &CPythonLayout::unicodeAsciiData},
};

// Published by some versions only (3.14 added set_object, gen_object and stackpointer; 3.15
// tp_basicsize, tp_dictoffset, ht_cached_keys): used where the version's shape has them.
const Published kPublishedSome[] = {
    {"interpreter_frame.localsplus", &CPythonLayout::frameLocalsplus},
    {"interpreter_frame.stackpointer", &CPythonLayout::frameStackTop},
    {"code_object.localsplusnames", &CPythonLayout::codeLocalsplusNames},
    {"code_object.localspluskinds", &CPythonLayout::codeLocalsplusKinds},
    {"code_object.argcount", &CPythonLayout::codeArgcount},
    {"type_object.tp_flags", &CPythonLayout::typeFlags},
    {"type_object.tp_basicsize", &CPythonLayout::typeBasicsize},
    {"type_object.tp_dictoffset", &CPythonLayout::typeDictoffset},
    {"heap_type_object.ht_cached_keys", &CPythonLayout::heapTypeCachedKeys},
    {"tuple_object.ob_item", &CPythonLayout::tupleItems},
    {"list_object.ob_item", &CPythonLayout::listItems},
    {"float_object.ob_fval", &CPythonLayout::floatValue},
    {"long_object.lv_tag", &CPythonLayout::longTag},
    {"long_object.ob_digit", &CPythonLayout::longDigits},
    {"set_object.mask", &CPythonLayout::setMask},
    {"set_object.table", &CPythonLayout::setTable},
    {"gen_object.gi_iframe", &CPythonLayout::genIframe},
    {"gen_object.gi_frame_state", &CPythonLayout::genFrameState},
};

// PyHeapTypeObject.ht_name follows the type and its five method tables (as_async 4 pointers,
// as_number 36, as_mapping 3, as_sequence 10, as_buffer 2): 55 pointers.
constexpr int64_t kMethodTables = int64_t{55} * 8;
constexpr int64_t kMaxStruct = 1 << 22;

}  // namespace

std::optional<DebugOffsetsHeader> readDebugOffsetsHeader(const Memory& memory, uint64_t runtime) {
    char cookie[8];
    if (!memory.readExact(runtime, cookie, 8) || std::memcmp(cookie, "xdebugpy", 8) != 0) return std::nullopt;
    auto version = memory.readValue<uint64_t>(runtime + 8);
    auto freeThreaded = memory.readValue<uint64_t>(runtime + 16);
    if (!version || !freeThreaded) return std::nullopt;
    return DebugOffsetsHeader{*version, *freeThreaded != 0};
}

DebugOffsetsUse applyDebugOffsets(const Memory& memory, uint64_t runtime, CPythonLayout* l) {
    DebugOffsetsUse use;
    auto header = readDebugOffsetsHeader(memory, runtime);
    if (!header) {
        use.why = "no _Py_DebugOffsets cookie at _PyRuntime";
        return use;
    }
    int minor = header->minor();
    if ((header->version >> 24) != 3 || minor < 13) {
        use.why = "_Py_DebugOffsets has no valid version (" + std::to_string(header->version) + ")";
        return use;
    }
    const auto& shape = shapeOf(minor);
    if (minor > kNewestDebugOffsetsMinor)
        use.notice = "CPython 3." + std::to_string(minor) + " is newer than any this pytstates was tested with (3." +
                     std::to_string(kNewestDebugOffsetsMinor) + "): its _Py_DebugOffsets is read with 3." +
                     std::to_string(kNewestDebugOffsetsMinor) + "'s shape, and every offset used was checked to lie inside its struct";
    std::vector<uint64_t> raw(shape.at("<size>") / 8);
    if (!memory.readExact(runtime, raw.data(), raw.size() * 8)) {
        use.why = "_Py_DebugOffsets is unreadable";
        return use;
    }
    auto at = [&](const std::string& name) -> int64_t {
        auto it = shape.find(name);
        return it == shape.end() ? kAbsent : static_cast<int64_t>(raw[it->second / 8]);
    };
    // Every offset used must lie inside its struct, as that struct's published size says; the
    // sizes themselves must be plausible.
    for (const auto& p : kPublished) {
        std::string name = p.name;
        std::string group = name.substr(0, name.find('.'));
        int64_t size = at(group + ".size"), value = at(name);
        if (size <= 0 || size > kMaxStruct) {
            use.why = "_Py_DebugOffsets gives " + group + " an implausible size (" + std::to_string(size) + ")";
            return use;
        }
        if (name == group + ".size") continue;
        if (value < 0 || value >= size) {
            use.why = "_Py_DebugOffsets puts " + std::string(layoutFieldLabel(p.field)) + " at " + std::to_string(value) +
                      ", outside its struct (" + group + " size " + std::to_string(size) + ")";
            return use;
        }
    }
    for (const char* gil : {"interpreter_state.gil_runtime_state_locked", "interpreter_state.gil_runtime_state_holder"}) {
        int64_t v = at(gil), base = at("interpreter_state.gil_runtime_state");
        if (v < base || v >= at("interpreter_state.size")) {
            use.why = std::string("_Py_DebugOffsets puts ") + gil + " outside the interpreter's GIL state";
            return use;
        }
    }
    l->freeThreaded = header->freeThreaded;
    for (const auto& p : kPublished) l->assign(p.field, at(p.name), "debug_offsets");
    // locked and holder are published relative to the interpreter (offsetof(PyInterpreterState,
    // _gil.locked)), enabled relative to the GIL struct; all are read through the ceval.gil
    // pointer, relative to the GIL struct.
    int64_t gil = at("interpreter_state.gil_runtime_state");
    l->assign(&CPythonLayout::gilLocked, at("interpreter_state.gil_runtime_state_locked") - gil, "debug_offsets");
    l->assign(&CPythonLayout::gilLastHolder, at("interpreter_state.gil_runtime_state_holder") - gil, "debug_offsets");
    int64_t enabled = at("interpreter_state.gil_runtime_state_enabled");
    if (header->freeThreaded && enabled >= 0 && enabled < 4096)
        l->assign(&CPythonLayout::gilEnabled, enabled, "debug_offsets");
    for (const auto& p : kPublishedSome) {
        std::string name = p.name;
        std::string group = name.substr(0, name.find('.'));
        if (!shape.count(name) || !shape.count(group + ".size")) continue;
        int64_t size = at(group + ".size"), value = at(name);
        if (size > 0 && size <= kMaxStruct && value >= 0 && value < size) l->assign(p.field, value, "debug_offsets");
    }
    // What follows from what is published.
    l->assign(&CPythonLayout::capsulePointer, at("pyobject.size"), "debug_offsets");
    l->assign(&CPythonLayout::heapTypeName, at("type_object.size") + kMethodTables, "debug_offsets");
    int64_t compact = at("unicode_object.compactunicodeobject_size");
    l->assign(&CPythonLayout::unicodeCompactData, compact != kAbsent ? compact : at("unicode_object.asciiobject_size") + 16,
              "debug_offsets");  // PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8
    completeDerivedLayout(l);
    l->source = "debug_offsets";
    use.applied = true;
    return use;
}

}  // namespace pytstates
