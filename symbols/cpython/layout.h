// SPDX-License-Identifier: Apache-2.0
// Where CPython keeps what pytstates reads: one struct of offsets per CPython build, filled
// from the best source available (DWARF, _Py_DebugOffsets, or the built-in table of the
// minor version). The walkers read only through this struct.
#pragma once

#include <cstdint>

#include "symbols/arch/arch.h"
#include <map>
#include <string>
#include <vector>

namespace pytstates {

constexpr int64_t kAbsent = -1;  // the field does not exist in this version

struct CPythonLayout {
    int minor = 0;        // 3.<minor>
    bool freeThreaded = false;  // a PEP 703 build (Py_GIL_DISABLED): _Py_DebugOffsets.free_threaded, or DWARF
    std::string source;   // the best source that gave the thread-state fields: "dwarf", "debug_offsets", "table"
    bool dwarfCached = false;  // DWARF's answers came from the cache (type_cache.h), no DWARF was read
    std::vector<std::string> disagreements;  // where a better source contradicted a worse one
    std::map<std::string, std::string> sources;  // field label (layoutFields) -> "dwarf", "debug_offsets", "table"

    // Sets one field from `source` ("dwarf", "debug_offsets", "table"), noting a disagreement
    // with what an earlier source said; `label` names the field in that note when the version's
    // own name differs from layoutFields' (f_back, prev_instr).
    void assign(int64_t CPythonLayout::*field, int64_t value, const char* source, const char* label = nullptr);

    // _PyRuntimeState
    int64_t runtimeInterpretersHead = kAbsent;
    int64_t runtimeInterpretersMain = kAbsent;
    int64_t runtimeGilLocked = kAbsent;       // ceval.gil.locked (<= 3.11: one GIL per runtime)
    int64_t runtimeGilLastHolder = kAbsent;   // ceval.gil.last_holder
    int64_t runtimeTstateCurrent = kAbsent;   // gilstate.tstate_current (<= 3.11)
    int64_t runtimeAutoTssKey = kAbsent;      // Py_tss_t {int _is_initialized; unsigned _key;}

    // PyInterpreterState
    int64_t interpSize = kAbsent;  // sizeof: a thread state inside it is its built-in initial one (3.12+)
    int64_t interpNext = kAbsent;
    int64_t interpThreadsHead = kAbsent;
    int64_t interpId = kAbsent;
    int64_t interpRuntime = kAbsent;  // back-pointer to _PyRuntime (3.9+)
    int64_t interpDict = kAbsent;
    int64_t interpBuiltins = kAbsent;
    int64_t interpSysdict = kAbsent;
    int64_t interpCevalGil = kAbsent;  // pointer to the GIL in use (3.12+)
    // The garbage collector's lists (GIL builds): generations[3] (24-byte gc_generation structs,
    // each starting with its list head) and permanent_generation; in the interpreter (3.9+) or,
    // with gcInRuntime, in _PyRuntime (3.8).
    int64_t gcGenerations = kAbsent;
    int64_t gcPermanent = kAbsent;
    bool gcInRuntime = false;

    // struct _gil_runtime_state, reached through interpCevalGil (3.12+)
    int64_t gilLocked = kAbsent;
    int64_t gilLastHolder = kAbsent;
    int64_t gilEnabled = kAbsent;  // free-threaded builds: whether the GIL was enabled at run time

    // PyThreadState
    int64_t tstatePrev = kAbsent;
    int64_t tstateNext = kAbsent;
    int64_t tstateInterp = kAbsent;
    int64_t tstateFrame = kAbsent;         // PyFrameObject* (<= 3.10)
    int64_t tstateCframe = kAbsent;        // _PyCFrame* (3.11, 3.12)
    int64_t cframeCurrentFrame = kAbsent;  // _PyCFrame.current_frame
    int64_t tstateCurrentFrame = kAbsent;  // _PyInterpreterFrame* (3.13+)
    int64_t tstateThreadId = kAbsent;
    int64_t tstateNativeThreadId = kAbsent;
    int64_t tstateId = kAbsent;
    int64_t tstateState = kAbsent;  // 3.13+: 0 detached, 1 attached, 2 suspended

    // Frames: PyFrameObject (<= 3.10) or _PyInterpreterFrame (3.11+)
    int64_t framePrevious = kAbsent;  // f_back / previous
    int64_t frameCode = kAbsent;      // f_code / f_executable (tagged on 3.14)
    int64_t frameInstr = kAbsent;     // f_lasti (int) / prev_instr / instr_ptr
    int64_t frameOwner = kAbsent;     // char (3.11+)
    int64_t frameIsEntry = kAbsent;   // 3.11 only

    // PyCodeObject
    int64_t codeFilename = kAbsent;
    int64_t codeName = kAbsent;
    int64_t codeFirstLineno = kAbsent;
    int64_t codeLineTable = kAbsent;     // co_lnotab (<= 3.9) / co_linetable (3.10+), a bytes object
    int64_t codeCode = kAbsent;          // co_code bytes object (<= 3.10)
    int64_t codeCodeAdaptive = kAbsent;  // first instruction, inline (3.11+)

    // str and bytes
    int64_t unicodeLength = 16;
    int64_t unicodeState = 32;
    int64_t unicodeAsciiData = kAbsent;    // sizeof(PyASCIIObject)
    int64_t unicodeCompactData = kAbsent;  // sizeof(PyCompactUnicodeObject)
    int64_t bytesSize = 16;
    int64_t bytesData = 32;
    int64_t objectType = 8;  // ob_type
    // Where an object's own fields start: after PyObject_HEAD, which ob_type ends (16 with a GIL,
    // 32 in a free-threaded build's longer head). PyCFunctionObject.m_ml / m_self,
    // PyMethodObject.im_func / im_self, wrapperobject.descr / self are its first two pointers.
    int64_t objectFields() const { return objectType + 8; }
    int64_t typeName = 24;   // tp_name
    int64_t typeBase = 256;  // tp_base (the same from 3.8 to 3.15 on LP64)
    int64_t heapTypeName = kAbsent;  // PyHeapTypeObject.ht_name (a str on the heap, in every core)

    // dict: PyDictObject.ma_keys -> PyDictKeysObject
    int64_t dictKeys = 32;
    int64_t dictValues = 40;
    bool dictKeysLog2 = true;        // 3.11+: dk_log2_size/dk_log2_index_bytes/dk_kind; else dk_size
    int64_t dictKeysSize = 8;        // dk_size (<= 3.10) or dk_log2_size (uint8)
    int64_t dictKeysIndexBytes = 9;  // dk_log2_index_bytes (3.11+)
    int64_t dictKeysKind = 10;       // dk_kind (3.11+): 0 general, 1 unicode, 2 split
    int64_t dictKeysNentries = 24;
    int64_t dictKeysIndices = 32;

    int64_t capsulePointer = 16;     // PyCapsule.pointer
    int64_t moduleDict = 16;         // PyModuleObject.md_dict

    // Objects read by ObjectReader (symbols/cpython/object_reader.h). Defaults are the GIL builds'
    // on LP64 (the same 3.8 - 3.15 where no table row says otherwise); the free-threaded object
    // header is 16 bytes longer.
    int64_t varObjectSize = 16;      // PyVarObject.ob_size
    int64_t typeBasicsize = 32;      // PyTypeObject.tp_basicsize
    int64_t typeItemsize = 40;       // PyTypeObject.tp_itemsize
    int64_t typeFlags = 168;         // PyTypeObject.tp_flags (unsigned long)
    int64_t typeDictoffset = 288;    // PyTypeObject.tp_dictoffset
    int64_t heapTypeCachedKeys = kAbsent;  // PyHeapTypeObject.ht_cached_keys (3.11+: the keys of managed/inline values)
    int64_t managedDict = kAbsent;   // 3.11+: where the instance dict (3.12: dict-or-values) is, from the object (negative)
    int64_t managedValues = kAbsent; // 3.11 only: PyDictValues* before the object (negative)
    int64_t dictValuesValues = 0;    // PyDictValues.values (3.13+: after capacity/size/embedded/valid)
    int64_t tupleItems = 24;         // PyTupleObject.ob_item (3.14+: after ob_hash)
    int64_t listItems = 24;          // PyListObject.ob_item (a pointer to the array)
    int64_t floatValue = 16;         // PyFloatObject.ob_fval
    int64_t longTag = 16;            // ob_size (<= 3.11: signed digit count) / long_value.lv_tag (3.12+)
    int64_t longDigits = 24;         // ob_digit / long_value.ob_digit (30-bit digits in uint32)
    int64_t setMask = 32;            // PySetObject.mask
    int64_t setTable = 40;           // PySetObject.table (setentry {key, hash})
    int64_t dequeLeftBlock = 24;     // dequeobject.leftblock (ob_size is the length)
    int64_t dequeLeftIndex = 40;     // dequeobject.leftindex
    int64_t cellRef = 16;            // PyCellObject.ob_ref

    // Frame contents: locals, globals, value and block stacks.
    int64_t frameGlobals = kAbsent;     // f_globals
    int64_t frameLocalsplus = kAbsent;  // f_localsplus (<= 3.10) / localsplus (3.11+)
    int64_t frameValueStack = kAbsent;  // <= 3.10: f_valuestack
    int64_t frameStackTop = kAbsent;    // f_stacktop (<= 3.9, pointer) / f_stackdepth (3.10, int) / stacktop (3.11-3.13, int index into localsplus) / stackpointer (3.14+)
    int64_t frameBlockCount = kAbsent;  // <= 3.10: f_iblock
    int64_t frameBlockStack = kAbsent;  // <= 3.10: f_blockstack[CO_MAXBLOCKS] of PyTryBlock {int type, handler, level}
    int64_t codeArgcount = kAbsent;
    int64_t codeKwonlyArgcount = kAbsent;
    int64_t codeFlags = kAbsent;        // CO_VARARGS 0x4, CO_VARKEYWORDS 0x8
    int64_t codeNlocals = kAbsent;      // <= 3.10: how many of f_localsplus are co_varnames
    int64_t codeVarnames = kAbsent;     // <= 3.10: tuples of names
    int64_t codeCellvars = kAbsent;
    int64_t codeFreevars = kAbsent;
    int64_t codeLocalsplusNames = kAbsent;  // 3.11+: co_localsplusnames (tuple)
    int64_t codeLocalsplusKinds = kAbsent;  // 3.11+: co_localspluskinds (bytes)
    int64_t codeExceptionTable = kAbsent;   // 3.11+: co_exceptiontable (bytes)
    // Generators and coroutines (PyGenObject's head is the same for coroutines and async generators)
    int64_t genFrame = kAbsent;       // <= 3.10: gi_frame (PyFrameObject*)
    int64_t genIframe = kAbsent;      // 3.11+: gi_iframe (the _PyInterpreterFrame, inline)
    int64_t genFrameState = kAbsent;  // 3.11+: gi_frame_state (int8)
};

// Every field with the name CPython's headers give it ("PyThreadState.prev"): the labels of
// `sources` and of disagreements.
struct LayoutField {
    int64_t CPythonLayout::*member;
    const char* label;
};
const std::vector<LayoutField>& layoutFields();
const char* layoutFieldLabel(int64_t CPythonLayout::*member);

// The built-in table for a release (non-debug) build of 3.<minor> on a machine, with the GIL or
// free-threaded; false when there is none for that build: a table is never used for a build it
// was not measured on. micro: 3.<minor>.<micro> when known (_Py_DebugOffsets' version), -1 if not;
// a field that moved within a series has a row per measured release.
bool tableLayout(int minor, bool freeThreaded, Machine machine, CPythonLayout* out, int micro = -1);

// What no struct records but the version's headers fix (MANAGED_DICT_OFFSET, 3.11's values
// pointer, PyDictValues' header): set where unknown, for a build no table row fits (a debug build).
void completeDerivedLayout(CPythonLayout* layout);

class DwarfTypes;
// Overwrites table values with what DWARF says, recording disagreements; returns true when the
// core thread-state fields came from DWARF.
bool applyDwarfLayout(DwarfTypes& dwarf, CPythonLayout* layout);

}  // namespace pytstates
