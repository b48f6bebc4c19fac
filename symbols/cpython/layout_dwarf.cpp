// SPDX-License-Identifier: Apache-2.0
// Fills a CPythonLayout from the DWARF of libpython (or of a python executable), field by
// field, by the names CPython's own headers use. Names that changed across versions are
// listed as alternatives; the first one DWARF knows wins.
#include <initializer_list>
#include <utility>

#include "symbols/cpython/layout.h"
#include "symbols/elf/dwarf_types.h"

namespace pytstates {

namespace {

using Candidate = std::pair<const char*, const char*>;  // (type name, member path)

class Filler {
public:
    Filler(DwarfTypes& dwarf, CPythonLayout* layout) : dwarf_(dwarf), layout_(layout) {}

    bool set(int64_t CPythonLayout::*field, const char* label, std::initializer_list<Candidate> candidates) {
        for (const auto& [type, path] : candidates) {
            auto offset = dwarf_.memberOffset(type, path);
            if (!offset) continue;
            layout_->assign(field, *offset, "dwarf", label);
            return true;
        }
        return false;
    }
    void setSize(int64_t CPythonLayout::*field, const char* label, const char* type) {
        if (auto size = dwarf_.sizeOf(type)) layout_->assign(field, static_cast<int64_t>(*size), "dwarf", label);
    }

private:
    DwarfTypes& dwarf_;
    CPythonLayout* layout_;
};

}  // namespace

bool applyDwarfLayout(DwarfTypes& dwarf, CPythonLayout* l) {
    if (!dwarf.hasType("_ts") || !dwarf.hasType("pyruntimestate")) return false;
    // PEP 703's object header starts with the owning thread's id.
    l->freeThreaded = dwarf.memberOffset("_object", "ob_tid").has_value();
    Filler f(dwarf, l);
    using L = CPythonLayout;
    const char* rt = "pyruntimestate";
    f.set(&L::runtimeInterpretersHead, "_PyRuntime.interpreters.head", {{rt, "interpreters.head"}});
    f.set(&L::runtimeInterpretersMain, "_PyRuntime.interpreters.main", {{rt, "interpreters.main"}});
    if (l->minor <= 11) {
        f.set(&L::runtimeGilLocked, "_PyRuntime.ceval.gil.locked", {{rt, "ceval.gil.locked"}});
        f.set(&L::runtimeGilLastHolder, "_PyRuntime.ceval.gil.last_holder", {{rt, "ceval.gil.last_holder"}});
        f.set(&L::runtimeTstateCurrent, "_PyRuntime.gilstate.tstate_current", {{rt, "gilstate.tstate_current"}});
    }
    f.set(&L::runtimeAutoTssKey, "_PyRuntime.autoTSSkey", {{rt, "gilstate.autoTSSkey"}, {rt, "autoTSSkey"}});

    f.setSize(&L::interpSize, "sizeof(PyInterpreterState)", "_is");
    f.set(&L::interpNext, "PyInterpreterState.next", {{"_is", "next"}});
    f.set(&L::interpThreadsHead, "PyInterpreterState.threads.head", {{"_is", "threads.head"}, {"_is", "tstate_head"}});
    f.set(&L::interpId, "PyInterpreterState.id", {{"_is", "id"}});
    f.set(&L::interpRuntime, "PyInterpreterState.runtime", {{"_is", "runtime"}});
    f.set(&L::interpDict, "PyInterpreterState.dict", {{"_is", "dict"}});
    f.set(&L::interpBuiltins, "PyInterpreterState.builtins", {{"_is", "builtins"}});
    f.set(&L::interpSysdict, "PyInterpreterState.sysdict", {{"_is", "sysdict"}});
    if (l->minor >= 12) {
        f.set(&L::interpCevalGil, "PyInterpreterState.ceval.gil", {{"_is", "ceval.gil"}});
        f.set(&L::gilLocked, "_gil_runtime_state.locked", {{"_gil_runtime_state", "locked"}});
        f.set(&L::gilLastHolder, "_gil_runtime_state.last_holder", {{"_gil_runtime_state", "last_holder"}});
        if (l->freeThreaded) f.set(&L::gilEnabled, "_gil_runtime_state.enabled", {{"_gil_runtime_state", "enabled"}});
    }
    // The collector's lists: in the interpreter from 3.9, in _PyRuntime before; a free-threaded
    // build keeps none (its objects are found through mimalloc's heaps).
    if (!l->freeThreaded) {
        // 3.14.0 named its three lists young and old[2] (incremental collection, reverted in
        // 3.14.1 to generations[3]): the same three 24-byte structs in a row.
        if (f.set(&L::gcGenerations, "_gc_runtime_state.generations",
                  {{"_is", "gc.generations"}, {"_is", "gc.young"}})) {
            f.set(&L::gcPermanent, "_gc_runtime_state.permanent_generation", {{"_is", "gc.permanent_generation"}});
            l->gcInRuntime = false;
        } else if (f.set(&L::gcGenerations, "_gc_runtime_state.generations", {{rt, "gc.generations"}})) {
            f.set(&L::gcPermanent, "_gc_runtime_state.permanent_generation", {{rt, "gc.permanent_generation"}});
            l->gcInRuntime = true;
        }
    }

    f.set(&L::tstatePrev, "PyThreadState.prev", {{"_ts", "prev"}});
    f.set(&L::tstateNext, "PyThreadState.next", {{"_ts", "next"}});
    f.set(&L::tstateInterp, "PyThreadState.interp", {{"_ts", "interp"}});
    f.set(&L::tstateThreadId, "PyThreadState.thread_id", {{"_ts", "thread_id"}});
    f.set(&L::tstateNativeThreadId, "PyThreadState.native_thread_id", {{"_ts", "native_thread_id"}});
    f.set(&L::tstateId, "PyThreadState.id", {{"_ts", "id"}});
    if (l->minor <= 10) {
        if (l->minor == 10) f.set(&L::tstateCframe, "PyThreadState.cframe", {{"_ts", "cframe"}});
        f.set(&L::tstateFrame, "PyThreadState.frame", {{"_ts", "frame"}});
        f.set(&L::framePrevious, "PyFrameObject.f_back", {{"_frame", "f_back"}});
        f.set(&L::frameCode, "PyFrameObject.f_code", {{"_frame", "f_code"}});
        f.set(&L::frameInstr, "PyFrameObject.f_lasti", {{"_frame", "f_lasti"}});
        f.set(&L::codeCode, "PyCodeObject.co_code", {{"PyCodeObject", "co_code"}});
        f.set(&L::codeLineTable, "PyCodeObject.co_linetable", {{"PyCodeObject", "co_linetable"}, {"PyCodeObject", "co_lnotab"}});
    } else {
        if (l->minor <= 12) {
            f.set(&L::tstateCframe, "PyThreadState.cframe", {{"_ts", "cframe"}});
            f.set(&L::cframeCurrentFrame, "_PyCFrame.current_frame", {{"_PyCFrame", "current_frame"}});
        } else {
            f.set(&L::tstateCurrentFrame, "PyThreadState.current_frame", {{"_ts", "current_frame"}});
            f.set(&L::tstateState, "PyThreadState.state", {{"_ts", "state"}});
        }
        const char* fr = "_PyInterpreterFrame";
        f.set(&L::framePrevious, "_PyInterpreterFrame.previous", {{fr, "previous"}});
        f.set(&L::frameCode, "_PyInterpreterFrame.f_code", {{fr, "f_code"}, {fr, "f_executable"}});
        f.set(&L::frameInstr, "_PyInterpreterFrame.prev_instr", {{fr, "prev_instr"}, {fr, "instr_ptr"}});
        f.set(&L::frameOwner, "_PyInterpreterFrame.owner", {{fr, "owner"}});
        if (l->minor == 11) f.set(&L::frameIsEntry, "_PyInterpreterFrame.is_entry", {{fr, "is_entry"}});
        f.set(&L::codeCodeAdaptive, "PyCodeObject.co_code_adaptive", {{"PyCodeObject", "co_code_adaptive"}});
        f.set(&L::codeLineTable, "PyCodeObject.co_linetable", {{"PyCodeObject", "co_linetable"}});
    }
    f.set(&L::codeFilename, "PyCodeObject.co_filename", {{"PyCodeObject", "co_filename"}});
    f.set(&L::codeName, "PyCodeObject.co_name", {{"PyCodeObject", "co_name"}});
    f.set(&L::codeFirstLineno, "PyCodeObject.co_firstlineno", {{"PyCodeObject", "co_firstlineno"}});
    f.setSize(&L::unicodeAsciiData, "sizeof(PyASCIIObject)", "PyASCIIObject");
    f.setSize(&L::unicodeCompactData, "sizeof(PyCompactUnicodeObject)", "PyCompactUnicodeObject");
    f.set(&L::unicodeState, "PyASCIIObject.state", {{"PyASCIIObject", "state"}});
    f.set(&L::unicodeLength, "PyASCIIObject.length", {{"PyASCIIObject", "length"}});
    f.set(&L::bytesSize, "PyVarObject.ob_size", {{"PyBytesObject", "ob_base.ob_size"}});
    f.set(&L::bytesData, "PyBytesObject.ob_sval", {{"PyBytesObject", "ob_sval"}});
    f.set(&L::objectType, "PyObject.ob_type", {{"_object", "ob_type"}});
    f.set(&L::typeName, "PyTypeObject.tp_name", {{"_typeobject", "tp_name"}});
    f.set(&L::typeBase, "PyTypeObject.tp_base", {{"_typeobject", "tp_base"}});
    f.set(&L::heapTypeName, "PyHeapTypeObject.ht_name", {{"_heaptypeobject", "ht_name"}});
    f.set(&L::dictKeys, "PyDictObject.ma_keys", {{"PyDictObject", "ma_keys"}});
    f.set(&L::dictValues, "PyDictObject.ma_values", {{"PyDictObject", "ma_values"}});
    f.set(&L::dictKeysNentries, "PyDictKeysObject.dk_nentries", {{"_dictkeysobject", "dk_nentries"}});
    f.set(&L::dictKeysIndices, "PyDictKeysObject.dk_indices", {{"_dictkeysobject", "dk_indices"}});
    if (l->dictKeysLog2) {
        f.set(&L::dictKeysSize, "PyDictKeysObject.dk_log2_size", {{"_dictkeysobject", "dk_log2_size"}});
        f.set(&L::dictKeysIndexBytes, "PyDictKeysObject.dk_log2_index_bytes", {{"_dictkeysobject", "dk_log2_index_bytes"}});
        f.set(&L::dictKeysKind, "PyDictKeysObject.dk_kind", {{"_dictkeysobject", "dk_kind"}});
    } else {
        f.set(&L::dictKeysSize, "PyDictKeysObject.dk_size", {{"_dictkeysobject", "dk_size"}});
    }
    f.set(&L::capsulePointer, "PyCapsule.pointer", {{"PyCapsule", "pointer"}});
    f.set(&L::moduleDict, "PyModuleObject.md_dict", {{"PyModuleObject", "md_dict"}});
    // What ObjectReader and FrameReader's locals read.
    f.set(&L::varObjectSize, "PyVarObject.ob_size", {{"PyVarObject", "ob_size"}});
    f.set(&L::typeBasicsize, "PyTypeObject.tp_basicsize", {{"_typeobject", "tp_basicsize"}});
    f.set(&L::typeItemsize, "PyTypeObject.tp_itemsize", {{"_typeobject", "tp_itemsize"}});
    f.set(&L::typeFlags, "PyTypeObject.tp_flags", {{"_typeobject", "tp_flags"}});
    f.set(&L::typeDictoffset, "PyTypeObject.tp_dictoffset", {{"_typeobject", "tp_dictoffset"}});
    f.set(&L::heapTypeCachedKeys, "PyHeapTypeObject.ht_cached_keys", {{"_heaptypeobject", "ht_cached_keys"}});
    f.set(&L::dictValuesValues, "PyDictValues.values", {{"_dictvalues", "values"}});
    f.set(&L::tupleItems, "PyTupleObject.ob_item", {{"PyTupleObject", "ob_item"}});
    f.set(&L::listItems, "PyListObject.ob_item", {{"PyListObject", "ob_item"}});
    f.set(&L::floatValue, "PyFloatObject.ob_fval", {{"PyFloatObject", "ob_fval"}});
    f.set(&L::longTag, "PyLongObject.long_value.lv_tag", {{"_longobject", "long_value.lv_tag"}, {"_longobject", "ob_base.ob_size"}});
    f.set(&L::longDigits, "PyLongObject.long_value.ob_digit", {{"_longobject", "long_value.ob_digit"}, {"_longobject", "ob_digit"}});
    f.set(&L::setMask, "PySetObject.mask", {{"PySetObject", "mask"}});
    f.set(&L::setTable, "PySetObject.table", {{"PySetObject", "table"}});
    f.set(&L::dequeLeftBlock, "dequeobject.leftblock", {{"dequeobject", "leftblock"}});
    f.set(&L::dequeLeftIndex, "dequeobject.leftindex", {{"dequeobject", "leftindex"}});
    f.set(&L::cellRef, "PyCellObject.ob_ref", {{"PyCellObject", "ob_ref"}});
    f.set(&L::codeArgcount, "PyCodeObject.co_argcount", {{"PyCodeObject", "co_argcount"}});
    f.set(&L::codeKwonlyArgcount, "PyCodeObject.co_kwonlyargcount", {{"PyCodeObject", "co_kwonlyargcount"}});
    f.set(&L::codeFlags, "PyCodeObject.co_flags", {{"PyCodeObject", "co_flags"}});
    if (l->minor <= 10) {
        f.set(&L::frameGlobals, "PyFrameObject.f_globals", {{"_frame", "f_globals"}});
        f.set(&L::frameLocalsplus, "PyFrameObject.f_localsplus", {{"_frame", "f_localsplus"}});
        f.set(&L::frameValueStack, "PyFrameObject.f_valuestack", {{"_frame", "f_valuestack"}});
        f.set(&L::frameStackTop, "PyFrameObject.f_stacktop", {{"_frame", "f_stacktop"}, {"_frame", "f_stackdepth"}});
        f.set(&L::frameBlockCount, "PyFrameObject.f_iblock", {{"_frame", "f_iblock"}});
        f.set(&L::frameBlockStack, "PyFrameObject.f_blockstack", {{"_frame", "f_blockstack"}});
        f.set(&L::codeNlocals, "PyCodeObject.co_nlocals", {{"PyCodeObject", "co_nlocals"}});
        f.set(&L::codeVarnames, "PyCodeObject.co_varnames", {{"PyCodeObject", "co_varnames"}});
        f.set(&L::codeCellvars, "PyCodeObject.co_cellvars", {{"PyCodeObject", "co_cellvars"}});
        f.set(&L::codeFreevars, "PyCodeObject.co_freevars", {{"PyCodeObject", "co_freevars"}});
        f.set(&L::genFrame, "PyGenObject.gi_frame", {{"PyGenObject", "gi_frame"}});
    } else {
        const char* fr = "_PyInterpreterFrame";
        f.set(&L::frameGlobals, "_PyInterpreterFrame.f_globals", {{fr, "f_globals"}});
        f.set(&L::frameLocalsplus, "_PyInterpreterFrame.localsplus", {{fr, "localsplus"}});
        f.set(&L::frameStackTop, "_PyInterpreterFrame.stackpointer", {{fr, "stackpointer"}, {fr, "stacktop"}});
        f.set(&L::codeLocalsplusNames, "PyCodeObject.co_localsplusnames", {{"PyCodeObject", "co_localsplusnames"}});
        f.set(&L::codeLocalsplusKinds, "PyCodeObject.co_localspluskinds", {{"PyCodeObject", "co_localspluskinds"}});
        f.set(&L::codeExceptionTable, "PyCodeObject.co_exceptiontable", {{"PyCodeObject", "co_exceptiontable"}});
        f.set(&L::genIframe, "PyGenObject.gi_iframe", {{"PyGenObject", "gi_iframe"}});
        f.set(&L::genFrameState, "PyGenObject.gi_frame_state", {{"PyGenObject", "gi_frame_state"}});
    }
    completeDerivedLayout(l);
    l->source = "dwarf";
    return true;
}

}  // namespace pytstates
