// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/with_blocks.h"

#include <set>

#include "symbols/cpython/line_table.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/modules/debug_session.h"

namespace pytstates {

namespace {

// PyCFunctionObject.m_ml / m_self and PyMethodObject.im_func / im_self: the first and second
// pointer of the object's own fields (CPythonLayout::objectFields), from 3.8 to 3.15.
uint64_t headEnd(const CPythonLayout& l) { return static_cast<uint64_t>(l.objectFields()); }
constexpr int kMaxChain = 64;     // enclosing handlers followed from one instruction
constexpr int kMaxBlocks = 20;    // CO_MAXBLOCKS

// 3.14+ keeps _PyStackRef values: tag bits in the low two bits.
uint64_t untag(uint64_t v, int minor) { return minor >= 14 ? v & ~uint64_t(3) : v; }

// The version's opcodes: what with-blocks compile to.
void opcodes(int minor, WithBlockLayout& l) {
    if (minor <= 10) {
        l.withExceptStart = minor >= 9 ? 49 : -1;  // 3.8's WITH_CLEANUP_START cleanup is not read
        l.setupFinally = 122;
        l.enterWith = 143;
    } else if (minor <= 12) {
        l.pushExcInfo = 35;
        l.withExceptStart = 49;
        l.enterWith = 53;
    } else if (minor == 13) {
        l.pushExcInfo = 33;
        l.withExceptStart = 44;
        l.enterWith = 2;
    } else if (minor == 14) {
        l.pushExcInfo = 32;
        l.withExceptStart = 43;
    } else if (minor == 15) {
        l.pushExcInfo = 30;
        l.withExceptStart = 41;
    }
}

}  // namespace

namespace {

// The table of a release build with a GIL (x86_64 and aarch64 alike: pointers and ints only);
// known() is false for a version it does not hold.
WithBlockLayout tableOf(int minor) {
    WithBlockLayout t;
    opcodes(minor, t);
    switch (minor) {
        case 9: t.frameValuestack = 64, t.frameIblock = 112, t.frameBlockstack = 120, t.frameLocalsplus = 360; break;
        case 10: t.frameValuestack = 64, t.frameIblock = 104, t.frameBlockstack = 112, t.frameLocalsplus = 352; break;
        case 11: t.frameLocalsplus = 72, t.codeExceptionTable = 40, t.codeStacksize = 68, t.codeNlocalsplus = 76; break;
        case 12:
        case 13: t.frameLocalsplus = 72, t.codeExceptionTable = 40, t.codeStacksize = 64, t.codeNlocalsplus = 72; break;
        // Debian's python3.14 3.14.x (python3.14-dbg's DWARF): a live process without the debug
        // file names its Event's and Condition's waits by the frames' self.
        case 14: t.frameLocalsplus = 80, t.codeExceptionTable = 40, t.codeStacksize = 64, t.codeNlocalsplus = 72; break;
        default: break;
    }
    t.source = "table (CPython 3." + std::to_string(minor) + " with a GIL)";
    return t;
}

// The runtime's own layout (however it was found) has the release build's frame and code
// offsets the table was measured with: no Py_DEBUG or Py_TRACE_REFS head shifting them.
bool releaseLayout(const CPythonLayout& l) {
    struct Row {
        int minor;
        int64_t frameCode, frameInstr, codeCodeAdaptive;
    };
    static const Row kRows[] = {{9, 32, 104, kAbsent}, {10, 32, 96, kAbsent}, {11, 32, 56, 184}, {12, 0, 56, 192}, {13, 0, 56, 200}, {14, 0, 56, 208}};
    for (const auto& r : kRows)
        if (r.minor == l.minor) return l.frameCode == r.frameCode && l.frameInstr == r.frameInstr && l.codeCodeAdaptive == r.codeCodeAdaptive;
    return false;
}

}  // namespace

WithBlockLayout withBlockLayout(const Target& target, const Runtime& runtime, bool useDwarf) {
    WithBlockLayout l;
    int minor = runtime.layout.minor;
    opcodes(minor, l);
    if (l.withExceptStart < 0) {
        l.source = "CPython 3." + std::to_string(minor) + "'s with-blocks are not read";
        return l;
    }
    // The table first where the build is the one it was measured on: loading a debug file's
    // DWARF (often compressed) for four offsets would cost more than the rest of a check.
    if (!runtime.layout.freeThreaded && releaseLayout(runtime.layout)) {
        WithBlockLayout t = tableOf(minor);
        if (t.known()) return t;
    }
    const auto& modules = target.modules();
    if (useDwarf && runtime.moduleIndex < modules.size()) {
        const LoadedModule& mod = modules[runtime.moduleIndex];
        if (mod.debugElf && mod.debugElf->hasDebugInfo())
            if (auto types = DwarfTypes::borrow(target.debugSession(useDwarf).dwarf(mod), mod.debugElf->path())) {
                auto get = [&](const char* type, const char* member) { return types->memberOffset(type, member).value_or(-1); };
                if (minor >= 11) {
                    l.frameLocalsplus = get("_PyInterpreterFrame", "localsplus");
                    l.codeNlocalsplus = get("PyCodeObject", "co_nlocalsplus");
                    l.codeStacksize = get("PyCodeObject", "co_stacksize");
                    l.codeExceptionTable = get("PyCodeObject", "co_exceptiontable");
                    if (l.frameLocalsplus >= 0 && l.codeNlocalsplus >= 0 && l.codeStacksize >= 0 && l.codeExceptionTable >= 0) {
                        l.source = "DWARF of " + mod.debugElf->path();
                        return l;
                    }
                } else {
                    l.frameLocalsplus = get("PyFrameObject", "f_localsplus");
                    l.frameValuestack = get("PyFrameObject", "f_valuestack");
                    l.frameBlockstack = get("PyFrameObject", "f_blockstack");
                    l.frameIblock = get("PyFrameObject", "f_iblock");
                    if (l.frameLocalsplus >= 0 && l.frameValuestack >= 0 && l.frameBlockstack >= 0 && l.frameIblock >= 0) {
                        l.source = "DWARF of " + mod.debugElf->path();
                        return l;
                    }
                }
            }
    }
    l = WithBlockLayout{};
    l.source = "CPython 3." + std::to_string(minor) + (runtime.layout.freeThreaded ? "t" : "") +
               "'s frames: no DWARF, and no table for this build";
    return l;
}

WithBlockReader::WithBlockReader(const Memory& memory, const CPythonLayout& layout, const WithBlockLayout& with)
    : memory_(memory), layout_(layout), with_(with) {}

const WithBlockReader::Code& WithBlockReader::code(uint64_t address) {
    auto it = codes_.find(address);
    if (it != codes_.end()) return it->second;
    Code c;
    if (layout_.minor >= 11) {
        c.nlocalsplus = memory_.readValue<int32_t>(address + with_.codeNlocalsplus).value_or(-1);
        c.stacksize = memory_.readValue<int32_t>(address + with_.codeStacksize).value_or(-1);
        if (auto table = memory_.readPointer(address + with_.codeExceptionTable))
            if (auto bytes = readPyBytes(memory_, layout_, *table, 1 << 16)) c.entries = parseExceptionTable(*bytes);
    }
    return codes_.emplace(address, std::move(c)).first->second;
}

std::optional<uint64_t> WithBlockReader::slot(uint64_t frame, const Code& c, int64_t index) const {
    if (index < 0 || c.nlocalsplus < 0 || index >= int64_t(c.nlocalsplus) + c.stacksize) return std::nullopt;
    auto v = memory_.readPointer(frame + with_.frameLocalsplus + 8 * static_cast<uint64_t>(index));
    if (!v) return std::nullopt;
    return untag(*v, layout_.minor);
}

uint64_t WithBlockReader::boundTo(uint64_t exit) const {
    if (!exit) return 0;
    auto type = readTypeName(memory_, layout_, exit);
    if (!type) return 0;
    if (*type == "builtin_function_or_method") {
        // A C type's __exit__ (_thread.lock, _thread.RLock): its PyMethodDef names it.
        auto ml = memory_.readPointer(exit + headEnd(layout_));
        auto name = ml && *ml ? memory_.readPointer(*ml) : std::nullopt;
        if (!name || !*name || memory_.readCString(*name, 16).value_or("") != "__exit__") return 0;
        return memory_.readPointer(exit + headEnd(layout_) + 8).value_or(0);
    }
    if (*type == "method") return memory_.readPointer(exit + headEnd(layout_) + 8).value_or(0);  // a Python class's __exit__
    return 0;
}

bool WithBlockReader::isWithHandler(uint64_t code, uint32_t target) const {
    auto ops = memory_.readValue<uint32_t>(code + layout_.codeCodeAdaptive + 2 * uint64_t(target));
    if (!ops) return false;
    return int(*ops & 0xff) == with_.pushExcInfo && int((*ops >> 16) & 0xff) == with_.withExceptStart;
}

int WithBlockReader::lineAt(uint64_t code, int64_t byteOffset) const {
    auto tableObject = memory_.readPointer(code + layout_.codeLineTable);
    auto first = memory_.readValue<int32_t>(code + layout_.codeFirstLineno);
    auto table = tableObject ? readPyBytes(memory_, layout_, *tableObject, 1 << 20) : std::nullopt;
    if (!table || !first || byteOffset < 0) return -1;
    int offset = static_cast<int>(byteOffset);
    if (layout_.minor >= 11) return lineFromLocationTable(*table, *first, offset);
    if (layout_.minor == 10) return lineFromLinetable310(*table, *first, offset);
    return lineFromLnotab(*table, *first, offset);
}

std::vector<HeldWith> WithBlockReader::heldByExceptionTable(uint64_t frame) {
    std::vector<HeldWith> out;
    if (layout_.codeCodeAdaptive == kAbsent || layout_.frameInstr == kAbsent) return out;
    auto codeField = memory_.readPointer(frame + layout_.frameCode);
    auto instr = memory_.readPointer(frame + layout_.frameInstr);
    if (!codeField || !instr) return out;
    uint64_t address = untag(*codeField, layout_.minor);
    const Code& c = code(address);
    uint64_t first = address + layout_.codeCodeAdaptive;
    if (c.entries.empty() || c.nlocalsplus < 0 || *instr < first) return out;
    uint64_t index = (*instr - first) / 2;
    if (index > 0xffffffffu) return out;
    // The innermost handler, then each one enclosing it: a handler's own code lies inside the
    // blocks that enclose it, so the entry covering its first instruction is the next one out.
    std::set<uint32_t> seen;
    auto e = handlerAt(c.entries, static_cast<uint32_t>(index));
    for (int n = 0; e && n < kMaxChain && seen.insert(e->target).second; ++n) {
        if (e->lasti && isWithHandler(address, e->target)) {
            HeldWith h;
            h.depth = e->depth;
            if (layout_.minor >= 14) {
                h.exit = slot(frame, c, int64_t(c.nlocalsplus) + e->depth - 2).value_or(0);
                h.object = slot(frame, c, int64_t(c.nlocalsplus) + e->depth - 1).value_or(0);
                if (!h.exit || !readTypeName(memory_, layout_, h.exit)) h.object = 0;
            } else {
                h.exit = slot(frame, c, int64_t(c.nlocalsplus) + e->depth - 1).value_or(0);
                h.object = boundTo(h.exit);
            }
            h.withLine = lineAt(address, 2 * int64_t(e->target));
            if (h.object) out.push_back(h);
        }
        e = handlerAt(c.entries, e->target);
    }
    return out;
}

std::vector<HeldWith> WithBlockReader::heldByBlockStack(uint64_t frame) {
    std::vector<HeldWith> out;
    auto iblock = memory_.readValue<int32_t>(frame + with_.frameIblock);
    auto valuestack = memory_.readPointer(frame + with_.frameValuestack);
    auto codeField = memory_.readPointer(frame + layout_.frameCode);
    if (!iblock || *iblock <= 0 || *iblock > kMaxBlocks || !valuestack || !codeField || layout_.codeCode == kAbsent) return out;
    auto bytesObject = memory_.readPointer(*codeField + layout_.codeCode);
    if (!bytesObject) return out;
    auto size = memory_.readValue<int64_t>(*bytesObject + layout_.bytesSize);
    for (int i = *iblock - 1; i >= 0; --i) {
        uint64_t block = frame + with_.frameBlockstack + 12 * uint64_t(i);
        auto type = memory_.readValue<int32_t>(block), handler = memory_.readValue<int32_t>(block + 4),
             level = memory_.readValue<int32_t>(block + 8);
        if (!type || !handler || !level || *type != with_.setupFinally || *level < 1) continue;
        int64_t at = layout_.minor >= 10 ? int64_t(*handler) * 2 : *handler;  // 3.10 counts code units
        if (!size || at < 0 || at >= *size) continue;
        auto op = memory_.readValue<uint8_t>(*bytesObject + layout_.bytesData + static_cast<uint64_t>(at));
        if (!op || *op != with_.withExceptStart) continue;
        HeldWith h;
        h.depth = static_cast<uint32_t>(*level);
        h.exit = memory_.readPointer(*valuestack + 8 * uint64_t(*level - 1)).value_or(0);
        h.object = boundTo(h.exit);
        if (layout_.minor >= 10) h.withLine = lineAt(*codeField, at);  // 3.9 gives its cleanup the body's last line
        if (h.object) out.push_back(h);
    }
    return out;
}

std::vector<HeldWith> WithBlockReader::held(uint64_t frame) {
    if (!with_.known() || !frame) return {};
    return layout_.minor >= 11 ? heldByExceptionTable(frame) : heldByBlockStack(frame);
}

uint64_t WithBlockReader::entering(uint64_t frame) {
    if (!with_.known() || !frame || with_.enterWith < 0) return 0;
    auto codeField = memory_.readPointer(frame + layout_.frameCode);
    if (!codeField) return 0;
    uint64_t codeObject = untag(*codeField, layout_.minor);
    // The stack's slots from the enclosing block's depth up: the first bound __exit__ is the one
    // the entering instruction pushed (a loop's iterator may lie under it; above it, nothing of
    // this statement). 3.12 and 3.13's generated BEFORE_WITH stores its outputs once __enter__
    // returned: until then the slot keeps the manager itself, read only when it is a _thread.lock.
    auto firstExit = [&](auto slotAt, int64_t from, int64_t to) -> uint64_t {
        for (int64_t i = from; i < to && i - from < 64; ++i) {
            uint64_t value = slotAt(i);
            if (uint64_t object = boundTo(value)) return object;
            if (layout_.minor >= 12 && value && readTypeName(memory_, layout_, value).value_or("") == "_thread.lock") return value;
        }
        return 0;
    };
    if (layout_.minor >= 11) {
        auto instr = memory_.readPointer(frame + layout_.frameInstr);
        const Code& c = code(codeObject);
        uint64_t first = codeObject + layout_.codeCodeAdaptive;
        if (!instr || *instr < first || c.nlocalsplus < 0 || c.stacksize <= 0) return 0;
        if (memory_.readValue<uint8_t>(*instr).value_or(0) != with_.enterWith) return 0;
        auto e = handlerAt(c.entries, static_cast<uint32_t>((*instr - first) / 2));
        int64_t base = e ? int64_t(e->depth) : 0;
        return firstExit([&](int64_t i) { return slot(frame, c, int64_t(c.nlocalsplus) + i).value_or(0); }, base, c.stacksize);
    }
    auto lasti = memory_.readValue<int32_t>(frame + layout_.frameInstr);
    auto valuestack = memory_.readPointer(frame + with_.frameValuestack);
    auto iblock = memory_.readValue<int32_t>(frame + with_.frameIblock);
    if (!lasti || *lasti < 0 || !valuestack || !iblock || *iblock < 0 || *iblock > kMaxBlocks || layout_.codeCode == kAbsent) return 0;
    auto bytesObject = memory_.readPointer(codeObject + layout_.codeCode);
    int64_t at = layout_.minor >= 10 ? int64_t(*lasti) * 2 : *lasti;  // 3.10 counts code units
    if (!bytesObject || memory_.readValue<uint8_t>(*bytesObject + layout_.bytesData + uint64_t(at)).value_or(0) != with_.enterWith) return 0;
    int64_t base = *iblock > 0 ? memory_.readValue<int32_t>(frame + with_.frameBlockstack + 12 * uint64_t(*iblock - 1) + 8).value_or(0) : 0;
    return firstExit([&](int64_t i) { return memory_.readPointer(*valuestack + 8 * uint64_t(i)).value_or(0); }, base, base + 64);
}

uint64_t WithBlockReader::firstArgument(uint64_t frame) const {
    if (!with_.known() || !frame) return 0;
    return untag(memory_.readPointer(frame + with_.frameLocalsplus).value_or(0), layout_.minor);
}

std::vector<std::string> WithBlockReader::typeNames(uint64_t object) const {
    std::vector<std::string> names;
    auto type = object ? memory_.readPointer(object + layout_.objectType) : std::nullopt;
    for (int n = 0; type && *type && n < 16; ++n) {
        auto name = memory_.readPointer(*type + layout_.typeName);
        if (!name || !*name) break;
        names.push_back(memory_.readCString(*name, 64).value_or(""));
        type = memory_.readPointer(*type + layout_.typeBase);
    }
    return names;
}

}  // namespace pytstates
