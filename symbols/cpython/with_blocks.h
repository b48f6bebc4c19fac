// SPDX-License-Identifier: Apache-2.0
// What a Python frame holds by `with`: the objects whose with-body the frame executes now, read
// from what the exit needs, kept on the frame's value stack while the body runs.
// - 3.11-3.13: the instruction is covered (through the exception table's chain of enclosing
//   handlers) by a handler that starts with PUSH_EXC_INFO, WITH_EXCEPT_START (a with-block's
//   cleanup), and the slot at that entry's depth - 1 holds the bound __exit__ whose __self__ is
//   the object. The depth says the slot, not the frame's saved stack pointer, which is stale
//   while the frame runs a call.
// - 3.14+: LOAD_SPECIAL keeps the unbound __exit__ at depth - 2 and the object itself at depth - 1.
// - <= 3.10: the frame's block stack: a SETUP_FINALLY block whose handler is WITH_EXCEPT_START,
//   its level naming the slot of the bound __exit__ (SETUP_WITH sets the block up once
//   __enter__ returned: a `with` still acquiring holds no block).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "symbols/cpython/exception_table.h"
#include "symbols/cpython/runtimes.h"
#include "symbols/target.h"

namespace pytstates {

struct WithBlockLayout {
    // 3.11+
    int64_t frameLocalsplus = -1;  // _PyInterpreterFrame.localsplus (<= 3.10: PyFrameObject.f_localsplus)
    int64_t codeNlocalsplus = -1;  // PyCodeObject.co_nlocalsplus
    int64_t codeStacksize = -1;    // PyCodeObject.co_stacksize
    int64_t codeExceptionTable = -1;  // PyCodeObject.co_exceptiontable
    // <= 3.10
    int64_t frameValuestack = -1;  // PyFrameObject.f_valuestack
    int64_t frameBlockstack = -1;  // PyFrameObject.f_blockstack (PyTryBlock {b_type, b_handler, b_level}[])
    int64_t frameIblock = -1;      // PyFrameObject.f_iblock
    int pushExcInfo = -1, withExceptStart = -1, setupFinally = -1;  // the version's opcodes
    int enterWith = -1;  // BEFORE_WITH (3.11-3.13), SETUP_WITH (<= 3.10): a `with` calling __enter__
    std::string source;  // "DWARF of ...", "table (CPython 3.N)"; why unknown otherwise
    bool known() const { return frameLocalsplus >= 0; }
};

WithBlockLayout withBlockLayout(const Target& target, const Runtime& runtime, bool useDwarf);

// One object held by a with-block of a frame.
struct HeldWith {
    uint64_t object = 0;  // the context manager: the lock, the Condition
    uint64_t exit = 0;    // its __exit__ as the frame keeps it
    uint32_t depth = 0;   // the handler's stack depth (3.11+) or the block's level (<= 3.10)
    int withLine = -1;    // the `with` statement's line (its cleanup handler's); -1 unknown
};

class WithBlockReader {
public:
    WithBlockReader(const Memory& memory, const CPythonLayout& layout, const WithBlockLayout& with);
    // Innermost first; empty when nothing is shown (no with-block, unreadable, unknown layout).
    std::vector<HeldWith> held(uint64_t frame);
    // The object whose `with` the frame is entering (its __enter__ runs: a lock being acquired),
    // from the bound __exit__ the instruction keeps on the stack first, above the enclosing
    // block's depth; 0 when the frame is entering no with or nothing shows it (3.14+ not read).
    uint64_t entering(uint64_t frame);
    // The frame's first argument (a method's self), 0 when unreadable or unset.
    uint64_t firstArgument(uint64_t frame) const;
    // The object's type's name and its bases' (tp_base), the object's own type first.
    std::vector<std::string> typeNames(uint64_t object) const;

private:
    struct Code {
        std::vector<ExceptionEntry> entries;
        int32_t nlocalsplus = -1, stacksize = -1;
    };
    const Code& code(uint64_t address);
    std::optional<uint64_t> slot(uint64_t frame, const Code& c, int64_t index) const;
    // The object a bound __exit__ is bound to (3.8-3.13), 0 when `exit` is no bound __exit__.
    uint64_t boundTo(uint64_t exit) const;
    bool isWithHandler(uint64_t code, uint32_t target) const;
    int lineAt(uint64_t code, int64_t byteOffset) const;
    std::vector<HeldWith> heldByExceptionTable(uint64_t frame);
    std::vector<HeldWith> heldByBlockStack(uint64_t frame);

    const Memory& memory_;
    const CPythonLayout& layout_;
    WithBlockLayout with_;
    std::map<uint64_t, Code> codes_;
};

}  // namespace pytstates
