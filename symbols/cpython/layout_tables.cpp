// SPDX-License-Identifier: Apache-2.0
// Built-in layouts for CPython release builds on x86_64, measured on the pyenv builds
// 3.8.18 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0 and Debian's 3.14.10 and 3.15.2 (shared/research,
// and the DWARF of python3.1X-dbg), on a free-threaded 3.13.15, and on Debian 12's arm64 3.11
// and Debian 13's arm64 3.13.5.
// Used when neither DWARF nor _Py_DebugOffsets is available; DWARF is checked against them.
#include "symbols/cpython/layout.h"

#include <algorithm>

namespace pytstates {

namespace {

void commonThreadStateLinks(CPythonLayout* l) {
    l->tstatePrev = 0;
    l->tstateNext = 8;
    l->tstateInterp = 16;
}

// 3.8 - 3.10: PyFrameObject frames, co_lnotab / co_linetable.
void frameObjectLayout(CPythonLayout* l) {
    l->tstateFrame = 24;
    l->framePrevious = 24;  // f_back
    l->frameCode = 32;      // f_code
    l->codeFirstLineno = 40;
    l->codeCode = 48;
    l->codeFilename = 104;
    l->codeName = 112;
    l->codeLineTable = 120;
    l->unicodeAsciiData = 48;
    l->unicodeCompactData = 72;
    l->dictKeysLog2 = false;
    l->dictKeysNentries = 32;
    l->dictKeysIndices = 40;
}

// Where the garbage collector's generation lists are (measured with each build's DWARF). 3.13:
// 3.13.0 (pyenv) has them at 7424, Debian 13's 3.13.5 at 7420 (its DWARF, and the address its
// gcstate->generation0 holds in a live process): releases before 3.13.5 take 3.13.0's row, later
// ones 3.13.5's (micro < 0: unknown, 3.13.0's).
void gcLists(int minor, int micro, CPythonLayout* l) {
    struct Lists {
        int minor, fromMicro;
        int64_t generations, permanent;
    };
    static const Lists kLists[] = {{8, 0, 368, 448},     {9, 0, 640, 720},     {10, 0, 640, 720},
                                   {11, 0, 672, 752},    {12, 0, 136, 216},    {13, 0, 7424, 7504},
                                   {13, 5, 7420, 7504},  {14, 0, 7432, 7504},  {15, 0, 7408, 7480}};
    for (const auto& g : kLists)  // the last row that fits wins
        if (g.minor == minor && std::max(micro, 0) >= g.fromMicro) {
            l->gcGenerations = g.generations;
            l->gcPermanent = g.permanent;
            l->gcInRuntime = minor == 8;  // 3.9 moved the collector's state into the interpreter
        }
}

bool gilTable(int minor, int micro, CPythonLayout* l) {
    commonThreadStateLinks(l);
    gcLists(minor, micro, l);
    // PyHeapTypeObject.ht_name: sizeof(PyTypeObject) plus the five method tables after it.
    l->heapTypeName = minor == 9 ? 840 : minor <= 11 ? 848 : 856;
    switch (minor) {
        case 8:
            l->runtimeInterpretersHead = 32;
            l->runtimeInterpretersMain = 40;
            l->runtimeGilLastHolder = 1160;
            l->runtimeGilLocked = 1168;
            l->runtimeTstateCurrent = 1368;
            l->runtimeAutoTssKey = 1392;
            l->interpNext = 0;
            l->interpThreadsHead = 8;
            l->interpId = 16;
            l->interpSysdict = 72;
            l->interpBuiltins = 80;
            l->interpDict = 544;
            l->tstateThreadId = 176;
            l->tstateId = 256;
            frameObjectLayout(l);
            l->frameInstr = 104;  // f_lasti, in bytes
            return true;
        case 9:
        case 10:
            l->runtimeInterpretersHead = 32;
            l->runtimeInterpretersMain = 40;
            l->runtimeGilLastHolder = 360;
            l->runtimeGilLocked = 368;
            l->runtimeTstateCurrent = 568;
            l->runtimeAutoTssKey = 584;
            l->interpNext = 0;
            l->interpThreadsHead = 8;
            l->interpRuntime = 16;
            l->interpId = 24;
            l->interpSysdict = 872;
            l->interpBuiltins = 880;
            l->interpDict = minor == 9 ? 1376 : 1344;
            if (minor == 10) l->tstateCframe = 48;  // the eval loop's CFrame while the state runs, else root_cframe
            l->tstateThreadId = 176;
            l->tstateId = 256;
            frameObjectLayout(l);
            l->frameInstr = minor == 9 ? 104 : 96;  // f_lasti: bytes on 3.9, code units on 3.10
            return true;
        case 11:
            l->runtimeInterpretersHead = 40;
            l->runtimeInterpretersMain = 48;
            l->runtimeGilLastHolder = 368;
            l->runtimeGilLocked = 376;
            l->runtimeTstateCurrent = 576;
            l->runtimeAutoTssKey = 592;
            l->interpNext = 0;
            l->interpThreadsHead = 16;
            l->interpRuntime = 40;
            l->interpId = 48;
            l->interpSysdict = 904;
            l->interpBuiltins = 912;
            l->interpDict = 1400;
            l->tstateCframe = 56;
            l->cframeCurrentFrame = 8;
            l->tstateThreadId = 152;
            l->tstateNativeThreadId = 160;
            l->tstateId = 240;
            l->framePrevious = 48;
            l->frameCode = 32;
            l->frameInstr = 56;  // prev_instr
            l->frameIsEntry = 68;
            l->frameOwner = 69;
            l->codeFilename = 112;
            l->codeName = 120;
            l->codeLineTable = 136;
            l->codeFirstLineno = 72;
            l->codeCodeAdaptive = 184;
            l->unicodeAsciiData = 48;
            l->unicodeCompactData = 72;
            return true;
        case 12:
            l->runtimeInterpretersHead = 40;
            l->runtimeInterpretersMain = 48;
            l->runtimeAutoTssKey = 1544;
            l->interpNext = 0;
            l->interpId = 8;
            l->interpThreadsHead = 72;
            l->interpRuntime = 96;
            l->interpSysdict = 352;
            l->interpBuiltins = 360;
            l->interpCevalGil = 384;
            l->interpDict = 1720;
            l->gilLastHolder = 8;
            l->gilLocked = 16;
            l->tstateCframe = 56;
            l->cframeCurrentFrame = 0;
            l->tstateThreadId = 136;
            l->tstateNativeThreadId = 144;
            l->tstateId = 224;
            l->frameCode = 0;
            l->framePrevious = 8;
            l->frameInstr = 56;  // prev_instr
            l->frameOwner = 70;
            l->codeFilename = 112;
            l->codeName = 120;
            l->codeLineTable = 136;
            l->codeFirstLineno = 68;
            l->codeCodeAdaptive = 192;
            l->unicodeAsciiData = 40;
            l->unicodeCompactData = 56;
            return true;
        case 13:
        case 14:
            l->runtimeInterpretersHead = minor == 13 ? 632 : 808;
            l->runtimeInterpretersMain = minor == 13 ? 640 : 816;
            l->runtimeAutoTssKey = minor == 13 ? 2160 : 2336;
            l->interpCevalGil = 16;
            l->interpNext = minor == 13 ? 7264 : 7272;
            l->interpId = minor == 13 ? 7272 : 7280;
            l->interpThreadsHead = 7344;
            l->interpRuntime = minor == 13 ? 7376 : 7384;
            l->interpSysdict = minor == 13 ? 7640 : 7672;
            l->interpBuiltins = minor == 13 ? 7648 : 7680;
            l->interpDict = minor == 13 ? 8448 : 8496;
            l->gilLastHolder = 8;
            l->gilLocked = 16;
            l->tstateState = minor == 13 ? 40 : 44;
            l->tstateCurrentFrame = 72;
            l->tstateThreadId = 152;
            l->tstateNativeThreadId = 160;
            l->tstateId = 224;
            l->frameCode = 0;
            l->framePrevious = 8;
            l->frameInstr = 56;  // instr_ptr
            l->frameOwner = minor == 13 ? 70 : 74;
            l->codeFilename = 112;
            l->codeName = 120;
            l->codeLineTable = 136;
            l->codeFirstLineno = 68;
            l->codeCodeAdaptive = minor == 13 ? 200 : 208;
            l->unicodeAsciiData = 40;
            l->unicodeCompactData = 56;
            return true;
        case 15:  // PyGILState's slot is a thread-local (_Py_tss_gilstate): no autoTSSkey
            l->runtimeInterpretersHead = 936;
            l->runtimeInterpretersMain = 944;
            l->interpCevalGil = 16;
            l->interpNext = 7264;
            l->interpId = 7272;
            l->interpThreadsHead = 7336;
            l->interpRuntime = 7376;
            l->interpSysdict = 7576;
            l->interpBuiltins = 7584;
            l->interpDict = 8448;
            l->gilLastHolder = 8;
            l->gilLocked = 16;
            l->tstateState = 48;
            l->tstateCurrentFrame = 72;
            l->tstateThreadId = 176;
            l->tstateNativeThreadId = 184;
            l->tstateId = 248;
            l->frameCode = 0;
            l->framePrevious = 8;
            l->frameInstr = 56;
            l->frameOwner = 74;
            l->codeFilename = 112;
            l->codeName = 120;
            l->codeLineTable = 136;
            l->codeFirstLineno = 68;
            l->codeCodeAdaptive = 208;
            l->unicodeAsciiData = 40;
            l->unicodeCompactData = 56;
            l->heapTypeName = 864;
            return true;
        default:
            return false;
    }
}

// Free-threaded (--disable-gil) builds: 3.13t, measured on 3.13.15 built from Debian's source
// package (scripts/python-freethreaded). PEP 703's object header is 32 bytes (ob_tid, flags,
// ob_ref_local, ob_ref_shared before ob_type), so every object field moves by 16.
bool freeThreadedTable(int minor, CPythonLayout* l) {
    if (minor != 13) return false;
    commonThreadStateLinks(l);
    l->runtimeInterpretersHead = 632;
    l->runtimeInterpretersMain = 640;
    l->runtimeAutoTssKey = 2160;
    l->interpCevalGil = 16;
    l->interpNext = 7264;
    l->interpId = 7272;
    l->interpThreadsHead = 7344;
    l->interpRuntime = 7376;
    l->interpSysdict = 7648;
    l->interpBuiltins = 7656;
    l->interpDict = 8464;
    l->gilEnabled = 0;
    l->gilLastHolder = 16;
    l->gilLocked = 24;
    l->tstateState = 40;
    l->tstateCurrentFrame = 72;
    l->tstateThreadId = 152;
    l->tstateNativeThreadId = 160;
    l->tstateId = 224;
    l->frameCode = 0;
    l->framePrevious = 8;
    l->frameInstr = 56;
    l->frameOwner = 70;
    l->codeFilename = 128;
    l->codeName = 136;
    l->codeLineTable = 152;
    l->codeFirstLineno = 84;
    l->codeCodeAdaptive = 216;
    l->unicodeLength = 32;
    l->unicodeState = 48;
    l->unicodeAsciiData = 56;
    l->unicodeCompactData = 72;
    l->bytesSize = 32;
    l->bytesData = 48;
    l->objectType = 24;
    l->typeName = 40;
    l->heapTypeName = 872;
    l->dictKeys = 48;
    l->dictValues = 56;
    l->capsulePointer = 32;
    l->typeBase = 272;
    l->moduleDict = 32;
    return true;
}

// aarch64: measured on Debian 12's arm64 python3.11 and Debian 13's arm64 python3.13.5 (their
// -dbg packages' DWARF, every field of the x86_64 rows). The GIL's mutex and condition variables
// are pthread types, pthread_mutex_t 48 bytes on aarch64 against 40 on x86_64: what follows them
// moves. 3.11 keeps the GIL in _PyRuntime (tstate_current and autoTSSkey move by 16); 3.13 keeps
// it in PyInterpreterState._gil at 7752, so of the fields read only PyInterpreterState.dict moves
// (8448 -> 8464). Other versions have no table there.
bool aarch64Table(int minor, int micro, CPythonLayout* l) {
    if ((minor != 11 && minor != 13) || !gilTable(minor, micro, l)) return false;
    if (minor == 11) {
        l->runtimeTstateCurrent = 592;
        l->runtimeAutoTssKey = 608;
    } else {
        l->interpDict = 8464;
    }
    return true;
}


// What ObjectReader and FrameReader's locals read (measured with ptype /o on the pyenv builds'
// DWARF, python3.14d's and python3.15d's): the object fields that moved, the frames' locals,
// value and block stacks, the code objects' names of locals, the generators' frames.
// `shift` is how much longer the object header is (16 on free-threaded builds).
void contentsTable(int minor, int64_t shift, CPythonLayout* l) {
    for (auto field : {&CPythonLayout::varObjectSize, &CPythonLayout::typeBasicsize, &CPythonLayout::typeItemsize,
                       &CPythonLayout::typeFlags, &CPythonLayout::typeDictoffset, &CPythonLayout::tupleItems,
                       &CPythonLayout::listItems, &CPythonLayout::floatValue, &CPythonLayout::longTag,
                       &CPythonLayout::longDigits, &CPythonLayout::setMask, &CPythonLayout::setTable,
                       &CPythonLayout::dequeLeftBlock, &CPythonLayout::dequeLeftIndex, &CPythonLayout::cellRef})
        l->*field += shift;
    if (l->heapTypeName != kAbsent) l->heapTypeCachedKeys = l->heapTypeName + 24;  // after ht_slots, ht_qualname
    if (minor >= 14) l->tupleItems = 32 + shift;  // ob_hash, the cached hash, before the items
    if (minor <= 10) {
        l->frameGlobals = 48;
        l->frameValueStack = 64;
        l->frameStackTop = minor <= 9 ? 72 : 80;
        l->frameBlockCount = minor <= 9 ? 112 : 104;
        l->frameBlockStack = minor <= 9 ? 120 : 112;
        l->frameLocalsplus = minor <= 9 ? 360 : 352;
        l->codeArgcount = 16;
        l->codeKwonlyArgcount = 24;
        l->codeNlocals = 28;
        l->codeFlags = 36;
        l->codeVarnames = 72;
        l->codeFreevars = 80;
        l->codeCellvars = 88;
        l->genFrame = 16;
        return;
    }
    l->frameGlobals = minor == 11 ? 8 : 24;
    l->frameStackTop = 64;
    l->frameLocalsplus = minor <= 13 ? 72 : 80;
    l->codeExceptionTable = 40 + shift;
    l->codeFlags = 48 + shift;
    l->codeArgcount = (minor == 11 ? 56 : 52) + shift;
    l->codeKwonlyArgcount = (minor == 11 ? 64 : 60) + shift;
    l->codeLocalsplusNames = 96 + shift;
    l->codeLocalsplusKinds = 104 + shift;
    l->genFrameState = (minor == 11 ? 75 : 67) + shift;
    l->genIframe = (minor == 11 ? 80 : 72) + shift;
    // The instance dict before the object (its GC header is 16 bytes further down): 3.11 dict
    // and values, 3.12 one tagged word, 3.13+ the dict (values inline after the object). A
    // free-threaded build has no GC header there.
    l->managedDict = shift ? -8 : -24;
    if (minor == 11) l->managedValues = -32;
    l->dictValuesValues = minor >= 13 ? 8 : 0;
}

}  // namespace

bool tableLayout(int minor, bool freeThreaded, Machine machine, CPythonLayout* l, int micro) {
    *l = CPythonLayout{};
    l->minor = minor;
    l->freeThreaded = freeThreaded;
    l->source = "table";
    bool known = machine == Machine::AArch64 ? !freeThreaded && aarch64Table(minor, micro, l)
                                             : freeThreaded ? freeThreadedTable(minor, l) : gilTable(minor, micro, l);
    if (!known) return false;
    contentsTable(minor, freeThreaded ? 16 : 0, l);
    for (const auto& f : layoutFields())
        if (l->*f.member != kAbsent) l->sources[f.label] = "table";
    return true;
}

}  // namespace pytstates
