#include "symbols/cpython/debug_offsets.h"

#include <cstring>
#include <vector>

namespace pytstates {

namespace {

// Where each field sits inside _Py_DebugOffsets (all uint64_t), per minor version
// (Include/internal/pycore_runtime.h in 3.13, pycore_debug_offsets.h in 3.14).
struct DebugOffsetsShape {
    size_t totalSize;
    size_t runtimeSize, interpretersHead;
    size_t interpSize, interpId, interpNext, interpThreadsHead, interpSysdict, interpBuiltins, interpCevalGil,
        interpGilState, interpGilLocked, interpGilHolder;
    size_t tstateSize, tstatePrev, tstateNext, tstateInterp, tstateCurrentFrame, tstateThreadId, tstateNativeThreadId;
    size_t frameSize, framePrevious, frameExecutable, frameInstrPtr, frameOwner;
    size_t codeSize, codeFilename, codeName, codeLinetable, codeFirstlineno, codeCodeAdaptive;
    size_t objectType;
    size_t typeSize, typeName;
    size_t dictSize, dictKeys, dictValues;
    size_t bytesSize, bytesObSize, bytesSval;
    size_t unicodeSize, unicodeState, unicodeLength, unicodeAsciiSize;
};

constexpr DebugOffsetsShape kShape313 = {584, 24, 40, 48, 56, 64, 72, 96, 104, 112, 120, 136, 144, 152, 160, 168, 176, 184,
                                         192, 200, 224, 232, 240, 248, 264, 272, 280, 288, 304, 312, 344, 360, 368, 376,
                                         448, 456, 464, 512, 520, 528, 536, 544, 552, 560};
constexpr DebugOffsetsShape kShape314 = {760, 24, 40, 48, 56, 64, 72, 104, 112, 120, 128, 144, 152, 176, 184, 192, 200, 208,
                                         216, 224, 248, 256, 264, 272, 288, 312, 320, 328, 344, 352, 384, 408, 416, 424,
                                         528, 536, 544, 592, 600, 608, 616, 624, 632, 640};

}  // namespace

bool applyDebugOffsets(const Memory& memory, uint64_t runtime, CPythonLayout* l, std::string* why) {
    char cookie[8];
    if (!memory.readExact(runtime, cookie, 8) || std::memcmp(cookie, "xdebugpy", 8) != 0) {
        *why = "no _Py_DebugOffsets cookie at _PyRuntime";
        return false;
    }
    auto version = memory.readValue<uint64_t>(runtime + 8);
    auto freeThreaded = memory.readValue<uint64_t>(runtime + 16);
    if (!version || !freeThreaded || (*version >> 24) != 3) {
        *why = "_Py_DebugOffsets has no valid version";
        return false;
    }
    int minor = static_cast<int>((*version >> 16) & 0xff);
    const DebugOffsetsShape* shape = minor == 13 ? &kShape313 : minor == 14 ? &kShape314 : nullptr;
    if (!shape) {
        *why = "_Py_DebugOffsets of 3." + std::to_string(minor) + " has an unknown shape";
        return false;
    }
    if (*freeThreaded) {
        *why = "free-threaded build: not supported";
        return false;
    }
    std::vector<uint64_t> raw(shape->totalSize / 8);
    if (!memory.readExact(runtime, raw.data(), shape->totalSize)) {
        *why = "_Py_DebugOffsets is unreadable";
        return false;
    }
    auto at = [&](size_t offset) { return static_cast<int64_t>(raw[offset / 8]); };
    // Every offset must lie inside its struct, as its size says.
    auto inside = [&](size_t sizeField, std::initializer_list<size_t> fields) {
        int64_t size = at(sizeField);
        if (size <= 0 || size > (1 << 22)) return false;
        for (size_t f : fields)
            if (at(f) < 0 || at(f) >= size) return false;
        return true;
    };
    const auto& s = *shape;
    if (!inside(s.runtimeSize, {s.interpretersHead}) ||
        !inside(s.interpSize, {s.interpId, s.interpNext, s.interpThreadsHead, s.interpSysdict, s.interpBuiltins,
                               s.interpCevalGil, s.interpGilState, s.interpGilLocked, s.interpGilHolder}) ||
        !inside(s.tstateSize, {s.tstatePrev, s.tstateNext, s.tstateInterp, s.tstateCurrentFrame, s.tstateThreadId,
                               s.tstateNativeThreadId}) ||
        !inside(s.frameSize, {s.framePrevious, s.frameExecutable, s.frameInstrPtr, s.frameOwner}) ||
        !inside(s.codeSize, {s.codeFilename, s.codeName, s.codeLinetable, s.codeFirstlineno, s.codeCodeAdaptive}) ||
        !inside(s.typeSize, {s.typeName}) || !inside(s.dictSize, {s.dictKeys, s.dictValues}) ||
        !inside(s.bytesSize, {s.bytesObSize, s.bytesSval}) || !inside(s.unicodeSize, {s.unicodeState, s.unicodeLength})) {
        *why = "_Py_DebugOffsets has an offset outside its struct";
        return false;
    }
    auto set = [&](int64_t CPythonLayout::*field, const char* label, int64_t value) {
        int64_t& slot = l->*field;
        if (slot != kAbsent && slot != value)
            l->disagreements.push_back(std::string(label) + ": _Py_DebugOffsets says " + std::to_string(value) +
                                       ", the built-in table " + std::to_string(slot));
        slot = value;
    };
    using L = CPythonLayout;
    set(&L::runtimeInterpretersHead, "_PyRuntime.interpreters.head", at(s.interpretersHead));
    set(&L::interpSize, "sizeof(PyInterpreterState)", at(s.interpSize));
    set(&L::interpId, "PyInterpreterState.id", at(s.interpId));
    set(&L::interpNext, "PyInterpreterState.next", at(s.interpNext));
    set(&L::interpThreadsHead, "PyInterpreterState.threads.head", at(s.interpThreadsHead));
    set(&L::interpSysdict, "PyInterpreterState.sysdict", at(s.interpSysdict));
    set(&L::interpBuiltins, "PyInterpreterState.builtins", at(s.interpBuiltins));
    set(&L::interpCevalGil, "PyInterpreterState.ceval.gil", at(s.interpCevalGil));
    // locked/holder are published relative to the interpreter; the walker reads them through the
    // ceval.gil pointer, relative to the GIL struct.
    set(&L::gilLocked, "_gil_runtime_state.locked", at(s.interpGilLocked) - at(s.interpGilState));
    set(&L::gilLastHolder, "_gil_runtime_state.last_holder", at(s.interpGilHolder) - at(s.interpGilState));
    set(&L::tstatePrev, "PyThreadState.prev", at(s.tstatePrev));
    set(&L::tstateNext, "PyThreadState.next", at(s.tstateNext));
    set(&L::tstateInterp, "PyThreadState.interp", at(s.tstateInterp));
    set(&L::tstateCurrentFrame, "PyThreadState.current_frame", at(s.tstateCurrentFrame));
    set(&L::tstateThreadId, "PyThreadState.thread_id", at(s.tstateThreadId));
    set(&L::tstateNativeThreadId, "PyThreadState.native_thread_id", at(s.tstateNativeThreadId));
    set(&L::framePrevious, "_PyInterpreterFrame.previous", at(s.framePrevious));
    set(&L::frameCode, "_PyInterpreterFrame.f_executable", at(s.frameExecutable));
    set(&L::frameInstr, "_PyInterpreterFrame.instr_ptr", at(s.frameInstrPtr));
    set(&L::frameOwner, "_PyInterpreterFrame.owner", at(s.frameOwner));
    set(&L::codeFilename, "PyCodeObject.co_filename", at(s.codeFilename));
    set(&L::codeName, "PyCodeObject.co_name", at(s.codeName));
    set(&L::codeLineTable, "PyCodeObject.co_linetable", at(s.codeLinetable));
    set(&L::codeFirstLineno, "PyCodeObject.co_firstlineno", at(s.codeFirstlineno));
    set(&L::codeCodeAdaptive, "PyCodeObject.co_code_adaptive", at(s.codeCodeAdaptive));
    set(&L::objectType, "PyObject.ob_type", at(s.objectType));
    set(&L::typeName, "PyTypeObject.tp_name", at(s.typeName));
    set(&L::dictKeys, "PyDictObject.ma_keys", at(s.dictKeys));
    set(&L::dictValues, "PyDictObject.ma_values", at(s.dictValues));
    set(&L::bytesSize, "PyBytesObject.ob_size", at(s.bytesObSize));
    set(&L::bytesData, "PyBytesObject.ob_sval", at(s.bytesSval));
    set(&L::unicodeState, "PyASCIIObject.state", at(s.unicodeState));
    set(&L::unicodeLength, "PyASCIIObject.length", at(s.unicodeLength));
    set(&L::unicodeAsciiData, "sizeof(PyASCIIObject)", at(s.unicodeAsciiSize));
    l->source = "debug_offsets";
    return true;
}

}  // namespace pytstates
