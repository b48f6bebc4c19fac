// SPDX-License-Identifier: Apache-2.0
// A thread state's Python stack, innermost first, read through the layout.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "symbols/cpython/layout.h"
#include "symbols/cpython/line_table.h"
#include "symbols/cpython/object_reader.h"
#include "symbols/memory.h"

namespace pytstates {

struct PyFrame {
    uint64_t address = 0;
    std::string function;
    std::string file;
    int line = -1;
    // The outermost frame of those one native call of the eval loop (_PyEval_EvalFrameDefault)
    // runs: <= 3.10 every frame, 3.11 is_entry, 3.12+ the frame just inside a shim frame.
    bool entry = false;
    uint64_t code = 0;  // the code object
    // Bytes from the code's first instruction to the frame's instruction pointer; -1 unknown.
    // <= 3.9 f_lasti, 3.10 f_lasti * 2 (the last instruction started); 3.11, 3.12 prev_instr
    // (the last instruction started); 3.13+ instr_ptr (the instruction running or to run next).
    int instructionOffset = -1;
    // --locals: the frame's arguments and locals as shown (filled by commands/analysis/frame_locals).
    struct Local {
        std::string name, kind;  // kind: "arg", "local", "cell", "free"
        std::string type;        // the value's type name ("" unreadable)
        std::optional<std::string> value;  // repr() as CPython prints it from memory (object_repr.h:
                                           // builtins, containers, object.__repr__); else none
        std::string shown;       // what text shows: that repr, or <TYPE object at 0x...>
        uint64_t address = 0;
    };
    std::vector<Local> locals{};  // {}: aggregate initializers that stop before it need not name it
    bool localsRead = false;
    // 3.11+: the rest of the instruction's position (PEP 657), as co_positions(); -1 unknown.
    // (Last: aggregate initializers name the fields above by position.)
    int endLine = -1, column = -1, endColumn = -1;
};

// One local of a frame: its name, its value object (0 while unset; a cell's contents, not the
// cell), and what kind of variable it is.
struct FrameLocal {
    std::string name;
    uint64_t value = 0;
    std::string kind;  // "arg", "local", "cell", "free"
};

// One entry of a <= 3.10 frame's block stack (PyTryBlock): SETUP_FINALLY's, a with's, a loop's.
struct FrameBlock {
    int type = 0, handler = 0, level = 0;
};

// The most frames of one Python stack that are read: a longer chain is corrupt or cyclic. A safety
// cap, not a display limit: every stack is read whole up to it (thread states', greenlets' and asyncio
// tasks'), and what a report shows of it is the renderer's to choose (--frames).
constexpr size_t kMaxPythonFrames = 4096;

// True for the native function that runs Python frames (the eval loop), in every supported version.
bool isEvalLoopFunction(const std::string& nativeFunction);

class FrameReader {
public:
    FrameReader(const Memory& memory, const CPythonLayout& layout);
    // At most maxFrames frames; *note says why the walk ended early (unreadable, cyclic).
    std::vector<PyFrame> read(uint64_t tstate, size_t maxFrames, std::string* note);
    // The same from a given innermost frame (a PyFrameObject <= 3.10, an interpreter frame 3.11+),
    // such as the one a suspended greenlet saved.
    std::vector<PyFrame> readFrom(uint64_t frame, size_t maxFrames, std::string* note);
    // The frame reads as one: its code and previous-frame fields are readable, and the code field
    // names a code object (or, 3.12+, the frame is a shim the eval loop pushes).
    bool looksLikeFrame(uint64_t frame);
    // The thread state's innermost frame (0 when none or unreadable).
    uint64_t topFrame(uint64_t tstate) const;
    // Every frame of the thread state's Python stack (PyFrameObjects <= 3.10, interpreter frames
    // 3.11+, shims included), from its innermost through previous/f_back, until the chain ends,
    // repeats or runs past its bound, or visit(frame) returns false.
    void chain(uint64_t tstate, const std::function<bool(uint64_t frame)>& visit) const;
    // The thread state's cframe while it runs (3.10-3.12: the eval loop's local CFrame, on the
    // running thread's stack); 0 when it has none or it is root_cframe, inside the state itself.
    uint64_t runningCframe(uint64_t tstate) const;
    // 3.12+: the entry frame of each eval-loop call is a local of that call, on the stack of the
    // thread that runs the state.
    bool entryFramesOnStack() const;
    // 3.12+: the frame is owned by a C stack (an entry frame) or by the interpreter, not one of a
    // thread's data stack chunks, which are heap memory (mmap) and may lie anywhere, even between
    // another thread's stack pointer and its struct pthread (qemu's guests).
    bool ownedByCStackOrInterpreter(uint64_t frame) const;

    // What a frame holds (a PyFrameObject <= 3.10, an interpreter frame 3.11+: those `read`
    // and `readFrom` walk, PyFrame::address).
    // Its code object (3.14's tag bits cleared); 0 when unreadable or not a code object.
    uint64_t codeOf(uint64_t frame);
    // Its arguments and locals, args first (co_varnames, co_cellvars, co_freevars and
    // f_localsplus <= 3.10; co_localsplusnames/co_localspluskinds and localsplus 3.11+).
    // Empty when the code or the frame cannot be read. At most maxLocals.
    std::vector<FrameLocal> locals(uint64_t frame, size_t maxLocals = 256);
    // Its f_globals (0 when unreadable).
    uint64_t globals(uint64_t frame);
    // The value stack as the frame's saved stack pointer says, bottom first, at most maxItems:
    // <= 3.9 f_stacktop (null while the frame runs: empty), 3.10 f_stackdepth, 3.11-3.13
    // stacktop, 3.14+ stackpointer. On 3.11-3.13 a frame that is running a call (every frame
    // but a suspended generator's) has a stale saved stack pointer: the eval loop keeps the
    // real one in a register and saves it only at some instructions.
    std::vector<uint64_t> valueStack(uint64_t frame, size_t maxItems = 64);
    // <= 3.10: the block stack (f_iblock entries of f_blockstack), outermost first; empty 3.11+.
    std::vector<FrameBlock> blockStack(uint64_t frame);
    // 3.11+: the code's co_exceptiontable bytes; nullopt when unreadable or before 3.11.
    std::optional<std::vector<uint8_t>> exceptionTable(uint64_t code);
    // The frame a generator, coroutine or async generator runs in: 3.11+ the interpreter frame
    // inside the object, <= 3.10 gi_frame; 0 when it has finished (or is unreadable). Walk it with
    // readFrom(frame, 1, ...) for its own frame.
    uint64_t generatorFrame(uint64_t genOrCoro);
    // What a suspended generator or coroutine awaits or delegates to (`yield from`, `await`), as
    // CPython's _PyGen_yf finds it: <= 3.10 the stack top when the next instruction is
    // YIELD_FROM; 3.11, 3.12 the stack top when the next instruction is a RESUME after a yield
    // from/await (oparg >= 2); 3.13+ the stack top when gi_frame_state is
    // FRAME_SUSPENDED_YIELD_FROM (3.15: the entry under the top, as its GET_ITER leaves a
    // null_or_index above the iterator). 0 when none.
    uint64_t yieldFrom(uint64_t genOrCoro);

private:
    // The fields a walk reads of one frame, read in one go (a thousand threads' stacks are read
    // while the process is stopped): a field is there when its bytes were read.
    struct FrameBytes {
        unsigned char bytes[256];
        size_t valid = 0;
        template <typename T>
        std::optional<T> at(int64_t offset) const;
    };
    bool readFrameBytes(uint64_t frame, FrameBytes* out) const;
    std::optional<uint64_t> codeOf(const FrameBytes& frame) const;  // its code pointer, 3.14's tag bits cleared
    bool isShim(const FrameBytes& frame) const;                     // 3.12+: a frame the eval loop pushes, no code
    bool isCodeObject(uint64_t code);
    bool describe(uint64_t frame, const FrameBytes& bytes, uint64_t code, PyFrame* out);
    int instructionOffsetOf(const FrameBytes& bytes, uint64_t code) const;
    uint64_t stackRefObject(uint64_t slot) const;  // a PyObject* or 3.14+'s _PyStackRef: the object (0: none)
    bool stackExtent(uint64_t frame, uint64_t* base, size_t* depth);  // the value stack's start and depth
    uint64_t stackBase(uint64_t frame, uint64_t code);  // where the value stack starts

    // What a code object says (it never changes once made), read once per code object: a thousand
    // threads in the same functions cost one read of each name and line table.
    struct CodeInfo {
        std::string function, file;
        int firstLine = 0;
        std::optional<std::vector<unsigned char>> lineTable;
    };
    const CodeInfo& codeInfo(uint64_t code);
    // The line at one instruction of a code object, decoded once: threads parked in the same
    // place (a thousand waiting on one queue) decode its table once.
    const LinePosition& positionAt(uint64_t code, int offset, const std::vector<uint8_t>& table, int firstLine) {
        auto key = std::make_pair(code, offset);
        auto it = positionCache_.find(key);
        if (it == positionCache_.end()) it = positionCache_.emplace(key, positionFromLocationTable(table, firstLine, offset)).first;
        return it->second;
    }
    template <typename Decode>
    int lineAt(uint64_t code, int offset, Decode decode) {
        auto key = std::make_pair(code, offset);
        auto it = lineCache_.find(key);
        if (it == lineCache_.end()) it = lineCache_.emplace(key, decode(offset)).first;
        return it->second;
    }

    // What a code object says of its locals, read once per code object (10,000 tasks suspended in
    // the same coroutine cost one read of its names): each localsplus slot's name object (the
    // name decoded when first asked for), its kind, and whether it holds a cell.
    struct LocalSlot {
        uint64_t nameObject = 0;
        std::optional<std::string> name;  // decoded from nameObject on first use
        const char* kind = "local";       // "arg", "local", "cell", "free"
        bool throughCell = false;         // a cell or free variable: its cell's contents are the value
        bool hidden = false;              // 3.12+: an inlined comprehension's, shown while set
    };
    struct LocalsShape {
        bool readable = false;
        std::vector<LocalSlot> slots;
    };
    LocalsShape& localsShape(uint64_t code);
    LocalsShape readLocalsShape(uint64_t code);
    const std::string& slotName(LocalSlot& slot);

    const Memory& memory_;
    const CPythonLayout& layout_;
    ObjectReader objects_;  // its type names are read once per reader, not once per frame
    size_t frameSpan_ = 0;  // from a frame's start to the end of the last field read of it
    std::map<uint64_t, std::optional<size_t>> localsplusCounts_;  // 3.11+: code -> len(co_localsplusnames)
    std::map<uint64_t, LocalsShape> localsShapes_;
    std::map<uint64_t, bool> codeTypeCache_;  // type pointer -> is "code"
    std::map<uint64_t, CodeInfo> codeInfoCache_;
    std::map<std::pair<uint64_t, int>, int> lineCache_;
    std::map<std::pair<uint64_t, int>, LinePosition> positionCache_;  // 3.11+
};

}  // namespace pytstates
