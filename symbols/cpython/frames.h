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
};

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
    template <typename Decode>
    int lineAt(uint64_t code, int offset, Decode decode) {
        auto key = std::make_pair(code, offset);
        auto it = lineCache_.find(key);
        if (it == lineCache_.end()) it = lineCache_.emplace(key, decode(offset)).first;
        return it->second;
    }

    const Memory& memory_;
    const CPythonLayout& layout_;
    size_t frameSpan_ = 0;  // from a frame's start to the end of the last field read of it
    std::map<uint64_t, bool> codeTypeCache_;  // type pointer -> is "code"
    std::map<uint64_t, CodeInfo> codeInfoCache_;
    std::map<std::pair<uint64_t, int>, int> lineCache_;
};

}  // namespace pytstates
