// SPDX-License-Identifier: Apache-2.0
// The names of CPythonLayout's fields, as CPython 3.13+'s headers call them (older versions name
// some differently: f_back for _PyInterpreterFrame.previous), and how a source sets one.
#include "symbols/cpython/layout.h"

namespace pytstates {

const std::vector<LayoutField>& layoutFields() {
    using L = CPythonLayout;
    static const std::vector<LayoutField> fields = {
        {&L::runtimeInterpretersHead, "_PyRuntime.interpreters.head"},
        {&L::runtimeInterpretersMain, "_PyRuntime.interpreters.main"},
        {&L::runtimeGilLocked, "_PyRuntime.ceval.gil.locked"},
        {&L::runtimeGilLastHolder, "_PyRuntime.ceval.gil.last_holder"},
        {&L::runtimeTstateCurrent, "_PyRuntime.gilstate.tstate_current"},
        {&L::runtimeAutoTssKey, "_PyRuntime.autoTSSkey"},
        {&L::interpSize, "sizeof(PyInterpreterState)"},
        {&L::interpNext, "PyInterpreterState.next"},
        {&L::interpThreadsHead, "PyInterpreterState.threads.head"},
        {&L::interpId, "PyInterpreterState.id"},
        {&L::interpRuntime, "PyInterpreterState.runtime"},
        {&L::interpDict, "PyInterpreterState.dict"},
        {&L::interpBuiltins, "PyInterpreterState.builtins"},
        {&L::interpSysdict, "PyInterpreterState.sysdict"},
        {&L::interpCevalGil, "PyInterpreterState.ceval.gil"},
        {&L::gilLocked, "_gil_runtime_state.locked"},
        {&L::gilLastHolder, "_gil_runtime_state.last_holder"},
        {&L::gilEnabled, "_gil_runtime_state.enabled"},
        {&L::gcGenerations, "_gc_runtime_state.generations"},
        {&L::gcPermanent, "_gc_runtime_state.permanent_generation"},
        {&L::tstatePrev, "PyThreadState.prev"},
        {&L::tstateNext, "PyThreadState.next"},
        {&L::tstateInterp, "PyThreadState.interp"},
        {&L::tstateFrame, "PyThreadState.frame"},
        {&L::tstateCframe, "PyThreadState.cframe"},
        {&L::cframeCurrentFrame, "_PyCFrame.current_frame"},
        {&L::tstateCurrentFrame, "PyThreadState.current_frame"},
        {&L::tstateThreadId, "PyThreadState.thread_id"},
        {&L::tstateNativeThreadId, "PyThreadState.native_thread_id"},
        {&L::tstateId, "PyThreadState.id"},
        {&L::tstateState, "PyThreadState.state"},
        {&L::framePrevious, "_PyInterpreterFrame.previous"},
        {&L::frameCode, "_PyInterpreterFrame.f_executable"},
        {&L::frameInstr, "_PyInterpreterFrame.instr_ptr"},
        {&L::frameOwner, "_PyInterpreterFrame.owner"},
        {&L::frameIsEntry, "_PyInterpreterFrame.is_entry"},
        {&L::codeFilename, "PyCodeObject.co_filename"},
        {&L::codeName, "PyCodeObject.co_name"},
        {&L::codeFirstLineno, "PyCodeObject.co_firstlineno"},
        {&L::codeLineTable, "PyCodeObject.co_linetable"},
        {&L::codeCode, "PyCodeObject.co_code"},
        {&L::codeCodeAdaptive, "PyCodeObject.co_code_adaptive"},
        {&L::unicodeLength, "PyASCIIObject.length"},
        {&L::unicodeState, "PyASCIIObject.state"},
        {&L::unicodeAsciiData, "sizeof(PyASCIIObject)"},
        {&L::unicodeCompactData, "sizeof(PyCompactUnicodeObject)"},
        {&L::bytesSize, "PyBytesObject.ob_size"},
        {&L::bytesData, "PyBytesObject.ob_sval"},
        {&L::objectType, "PyObject.ob_type"},
        {&L::typeName, "PyTypeObject.tp_name"},
        {&L::typeBase, "PyTypeObject.tp_base"},
        {&L::heapTypeName, "PyHeapTypeObject.ht_name"},
        {&L::dictKeys, "PyDictObject.ma_keys"},
        {&L::dictValues, "PyDictObject.ma_values"},
        {&L::dictKeysSize, "PyDictKeysObject.dk_log2_size"},
        {&L::dictKeysIndexBytes, "PyDictKeysObject.dk_log2_index_bytes"},
        {&L::dictKeysKind, "PyDictKeysObject.dk_kind"},
        {&L::dictKeysNentries, "PyDictKeysObject.dk_nentries"},
        {&L::dictKeysIndices, "PyDictKeysObject.dk_indices"},
        {&L::capsulePointer, "PyCapsule.pointer"},
        {&L::moduleDict, "PyModuleObject.md_dict"},
        {&L::varObjectSize, "PyVarObject.ob_size"},
        {&L::typeBasicsize, "PyTypeObject.tp_basicsize"},
        {&L::typeItemsize, "PyTypeObject.tp_itemsize"},
        {&L::typeFlags, "PyTypeObject.tp_flags"},
        {&L::typeDictoffset, "PyTypeObject.tp_dictoffset"},
        {&L::heapTypeCachedKeys, "PyHeapTypeObject.ht_cached_keys"},
        {&L::managedDict, "MANAGED_DICT_OFFSET"},
        {&L::managedValues, "_PyObject_ManagedValuesPointer"},
        {&L::dictValuesValues, "PyDictValues.values"},
        {&L::tupleItems, "PyTupleObject.ob_item"},
        {&L::listItems, "PyListObject.ob_item"},
        {&L::floatValue, "PyFloatObject.ob_fval"},
        {&L::longTag, "PyLongObject.long_value.lv_tag"},
        {&L::longDigits, "PyLongObject.long_value.ob_digit"},
        {&L::setMask, "PySetObject.mask"},
        {&L::setTable, "PySetObject.table"},
        {&L::dequeLeftBlock, "dequeobject.leftblock"},
        {&L::dequeLeftIndex, "dequeobject.leftindex"},
        {&L::cellRef, "PyCellObject.ob_ref"},
        {&L::frameGlobals, "_PyInterpreterFrame.f_globals"},
        {&L::frameLocalsplus, "_PyInterpreterFrame.localsplus"},
        {&L::frameValueStack, "PyFrameObject.f_valuestack"},
        {&L::frameStackTop, "_PyInterpreterFrame.stackpointer"},
        {&L::frameBlockCount, "PyFrameObject.f_iblock"},
        {&L::frameBlockStack, "PyFrameObject.f_blockstack"},
        {&L::codeArgcount, "PyCodeObject.co_argcount"},
        {&L::codeKwonlyArgcount, "PyCodeObject.co_kwonlyargcount"},
        {&L::codeFlags, "PyCodeObject.co_flags"},
        {&L::codeNlocals, "PyCodeObject.co_nlocals"},
        {&L::codeVarnames, "PyCodeObject.co_varnames"},
        {&L::codeCellvars, "PyCodeObject.co_cellvars"},
        {&L::codeFreevars, "PyCodeObject.co_freevars"},
        {&L::codeLocalsplusNames, "PyCodeObject.co_localsplusnames"},
        {&L::codeLocalsplusKinds, "PyCodeObject.co_localspluskinds"},
        {&L::codeExceptionTable, "PyCodeObject.co_exceptiontable"},
        {&L::genFrame, "PyGenObject.gi_frame"},
        {&L::genIframe, "PyGenObject.gi_iframe"},
        {&L::genFrameState, "PyGenObject.gi_frame_state"},
    };
    return fields;
}

const char* layoutFieldLabel(int64_t CPythonLayout::*member) {
    for (const auto& f : layoutFields())
        if (f.member == member) return f.label;
    return "?";
}

void completeDerivedLayout(CPythonLayout* l) {
    if (l->minor >= 11 && l->managedDict == kAbsent) l->managedDict = l->freeThreaded ? -8 : -24;
    if (l->minor == 11 && l->managedValues == kAbsent) l->managedValues = -32;
    if (l->dictValuesValues == kAbsent) l->dictValuesValues = l->minor >= 13 ? 8 : 0;
    if (l->heapTypeCachedKeys == kAbsent && l->heapTypeName != kAbsent) l->heapTypeCachedKeys = l->heapTypeName + 24;
}

void CPythonLayout::assign(int64_t CPythonLayout::*field, int64_t value, const char* source, const char* label) {
    int64_t& slot = this->*field;
    const char* name = layoutFieldLabel(field);
    auto was = sources.find(name);
    if (slot != kAbsent && slot != value && was != sources.end())
        disagreements.push_back(std::string(label ? label : name) + ": " + (std::string(source) == "dwarf" ? "DWARF" : "_Py_DebugOffsets") +
                                " says " + std::to_string(value) + ", " +
                                (was->second == "table" ? "the built-in table" : was->second == "dwarf" ? "DWARF" : "_Py_DebugOffsets") + " " +
                                std::to_string(slot));
    slot = value;
    sources[name] = source;
}

}  // namespace pytstates
