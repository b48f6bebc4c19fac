// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/frames.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "symbols/cpython/line_table.h"
#include "symbols/cpython/object_reader.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {
constexpr int kFirstShimOwner = 3;  // 3.12+: CSTACK (3.12, 3.13) / INTERPRETER and CSTACK (3.14)
constexpr uint64_t kInsideState = 0x4000;  // root_cframe and the like lie within the state itself

// The frames a walk has been through: most walks are a few frames long, searched in place; a long
// one goes to a hash set.
class SeenAddresses {
public:
    bool insert(uint64_t address) {  // false: seen before
        if (!many_.empty()) return many_.insert(address).second;
        if (std::find(few_.begin(), few_.end(), address) != few_.end()) return false;
        few_.push_back(address);
        if (few_.size() > kFew) many_.insert(few_.begin(), few_.end());
        return true;
    }

private:
    static constexpr size_t kFew = 32;
    std::vector<uint64_t> few_;
    std::unordered_set<uint64_t> many_;
};
}  // namespace

bool isEvalLoopFunction(const std::string& nativeFunction) { return nativeFunction == "_PyEval_EvalFrameDefault"; }

FrameReader::FrameReader(const Memory& memory, const CPythonLayout& layout)
    : memory_(memory), layout_(layout), objects_(memory, layout) {
    auto reach = [this](int64_t offset, size_t size) {
        if (offset != kAbsent && offset >= 0) frameSpan_ = std::max(frameSpan_, static_cast<size_t>(offset) + size);
    };
    reach(layout_.frameCode, 8);
    reach(layout_.framePrevious, 8);
    reach(layout_.frameInstr, 8);
    reach(layout_.frameOwner, 1);
    reach(layout_.frameIsEntry, 1);
}

template <typename T>
std::optional<T> FrameReader::FrameBytes::at(int64_t offset) const {
    if (offset == kAbsent || offset < 0 || static_cast<size_t>(offset) + sizeof(T) > valid) return std::nullopt;
    T value;
    std::memcpy(&value, bytes + offset, sizeof(T));
    return value;
}

bool FrameReader::readFrameBytes(uint64_t frame, FrameBytes* out) const {
    if (frameSpan_ == 0 || frameSpan_ > sizeof out->bytes) return false;
    out->valid = memory_.read(frame, out->bytes, frameSpan_);
    return true;
}

uint64_t FrameReader::topFrame(uint64_t tstate) const {
    if (layout_.tstateFrame != kAbsent) return memory_.readPointer(tstate + layout_.tstateFrame).value_or(0);
    if (layout_.tstateCurrentFrame != kAbsent)
        return memory_.readPointer(tstate + layout_.tstateCurrentFrame).value_or(0);
    if (layout_.tstateCframe != kAbsent && layout_.cframeCurrentFrame != kAbsent) {
        uint64_t cframe = memory_.readPointer(tstate + layout_.tstateCframe).value_or(0);
        if (!cframe) return 0;
        return memory_.readPointer(cframe + layout_.cframeCurrentFrame).value_or(0);
    }
    return 0;
}

void FrameReader::chain(uint64_t tstate, const std::function<bool(uint64_t frame)>& visit) const {
    if (layout_.framePrevious == kAbsent) return;
    SeenAddresses seen;
    uint64_t frame = topFrame(tstate);
    for (size_t i = 0; frame && i < kMaxPythonFrames && seen.insert(frame); ++i) {
        if (!visit(frame)) return;
        frame = memory_.readPointer(frame + layout_.framePrevious).value_or(0);
    }
}

uint64_t FrameReader::runningCframe(uint64_t tstate) const {
    if (layout_.tstateCframe == kAbsent) return 0;
    uint64_t cframe = memory_.readPointer(tstate + layout_.tstateCframe).value_or(0);
    bool inside = cframe >= tstate && cframe < tstate + kInsideState;
    return inside ? 0 : cframe;
}

bool FrameReader::entryFramesOnStack() const { return layout_.minor >= 12 && layout_.framePrevious != kAbsent; }

bool FrameReader::ownedByCStackOrInterpreter(uint64_t frame) const {
    if (layout_.frameOwner == kAbsent || layout_.minor < 12) return false;
    return memory_.readValue<uint8_t>(frame + layout_.frameOwner).value_or(0) >= kFirstShimOwner;
}

bool FrameReader::isCodeObject(uint64_t code) {
    auto type = memory_.readPointer(code + layout_.objectType);
    if (!type || !*type) return false;
    auto it = codeTypeCache_.find(*type);
    if (it != codeTypeCache_.end()) return it->second;
    auto name = memory_.readPointer(*type + layout_.typeName);
    bool isCode = name && *name && memory_.readCString(*name, 32).value_or("") == "code";
    codeTypeCache_[*type] = isCode;
    return isCode;
}

const FrameReader::CodeInfo& FrameReader::codeInfo(uint64_t code) {
    auto it = codeInfoCache_.find(code);
    if (it != codeInfoCache_.end()) return it->second;
    CodeInfo info;
    info.function = readPyUnicode(memory_, layout_, memory_.readPointer(code + layout_.codeName).value_or(0)).value_or("???");
    info.file = readPyUnicode(memory_, layout_, memory_.readPointer(code + layout_.codeFilename).value_or(0)).value_or("???");
    info.firstLine = memory_.readValue<int32_t>(code + layout_.codeFirstLineno).value_or(0);
    info.lineTable = readPyBytes(memory_, layout_, memory_.readPointer(code + layout_.codeLineTable).value_or(0));
    return codeInfoCache_.emplace(code, std::move(info)).first->second;
}

bool FrameReader::describe(uint64_t frame, const FrameBytes& bytes, uint64_t code, PyFrame* out) {
    out->address = frame;
    out->code = code;
    out->instructionOffset = instructionOffsetOf(bytes, code);
    const CodeInfo& info = codeInfo(code);
    out->function = info.function;
    out->file = info.file;
    int firstLine = info.firstLine;
    const auto& table = info.lineTable;
    if (!table) return true;
    if (layout_.codeCodeAdaptive != kAbsent) {
        uint64_t instr = bytes.at<uint64_t>(layout_.frameInstr).value_or(0);
        uint64_t first = code + layout_.codeCodeAdaptive;
        if (instr < first) return false;  // incomplete frame: not started yet
        const LinePosition& p = positionAt(code, static_cast<int>(instr - first), *table, firstLine);
        out->line = p.line;
        out->endLine = p.endLine;
        out->column = p.column;
        out->endColumn = p.endColumn;
    } else {
        int lasti = bytes.at<int32_t>(layout_.frameInstr).value_or(-1);
        if (lasti < 0) lasti = 0;
        if (layout_.minor >= 10)
            out->line = lineAt(code, lasti, [&](int i) { return lineFromLinetable310(*table, firstLine, i * 2); });
        else
            out->line = lineAt(code, lasti, [&](int i) { return lineFromLnotab(*table, firstLine, i); });
    }
    return true;
}

std::optional<uint64_t> FrameReader::codeOf(const FrameBytes& frame) const {
    auto code = frame.at<uint64_t>(layout_.frameCode);
    if (code && layout_.minor >= 14) *code &= ~uint64_t(3);  // _PyStackRef tag bits
    return code;
}

bool FrameReader::isShim(const FrameBytes& frame) const {
    return layout_.frameOwner != kAbsent && layout_.minor >= 12 && frame.at<uint8_t>(layout_.frameOwner).value_or(0) >= kFirstShimOwner;
}

bool FrameReader::looksLikeFrame(uint64_t frame) {
    FrameBytes bytes;
    if (!readFrameBytes(frame, &bytes)) return false;
    auto code = codeOf(bytes);
    if (!code || !bytes.at<uint64_t>(layout_.framePrevious)) return false;
    return isShim(bytes) || (*code && isCodeObject(*code));
}

std::vector<PyFrame> FrameReader::read(uint64_t tstate, size_t maxFrames, std::string* note) {
    return readFrom(topFrame(tstate), maxFrames, note);
}

std::vector<PyFrame> FrameReader::readFrom(uint64_t frame, size_t maxFrames, std::string* note) {
    std::vector<PyFrame> frames;
    frames.reserve(std::min<size_t>(maxFrames, 8));  // most stacks are short: a thousand threads, a thousand of these
    SeenAddresses seen;
    FrameBytes bytes;
    for (size_t walked = 0; frame && frames.size() < maxFrames; ++walked) {
        if (walked >= kMaxPythonFrames || !seen.insert(frame)) {
            if (note) *note = "the frame chain is cyclic or too long";
            break;
        }
        std::optional<uint64_t> codeField, previous;
        if (readFrameBytes(frame, &bytes)) {
            codeField = codeOf(bytes);
            previous = bytes.at<uint64_t>(layout_.framePrevious);
        }
        if (!codeField || !previous) {
            if (note) *note = "the frame at " + hexAddress(frame) + " is unreadable";
            break;
        }
        uint64_t code = *codeField;
        bool shim = isShim(bytes);
        if (shim && !frames.empty()) frames.back().entry = true;  // the eval call that pushed the shim ends here
        if (!shim && code && isCodeObject(code)) {
            PyFrame f;
            if (describe(frame, bytes, code, &f)) {
                if (layout_.minor <= 10) f.entry = true;  // one eval call per PyFrameObject
                else if (layout_.frameIsEntry != kAbsent) f.entry = bytes.at<uint8_t>(layout_.frameIsEntry).value_or(0) != 0;
                frames.push_back(std::move(f));
            }
        }
        frame = *previous;
    }
    return frames;
}

int FrameReader::instructionOffsetOf(const FrameBytes& bytes, uint64_t code) const {
    if (layout_.codeCodeAdaptive != kAbsent) {
        uint64_t instr = bytes.at<uint64_t>(layout_.frameInstr).value_or(0);
        uint64_t first = code + layout_.codeCodeAdaptive;
        if (instr < first || instr - first > (1u << 30)) return -1;
        return static_cast<int>(instr - first);
    }
    auto lasti = bytes.at<int32_t>(layout_.frameInstr);
    if (!lasti || *lasti < 0) return -1;
    return layout_.minor >= 10 ? *lasti * 2 : *lasti;
}

namespace {
constexpr size_t kMaxLocalsplus = 1 << 16;
constexpr int kCoVarargs = 0x4, kCoVarkeywords = 0x8;
// co_localspluskinds (3.11+)
constexpr uint8_t kFastArgs = 0x0e, kFastHidden = 0x10, kFastLocal = 0x20, kFastCell = 0x40, kFastFree = 0x80;
constexpr int kMaxBlocks = 20;  // CO_MAXBLOCKS
constexpr int64_t kMaxStackDepth = 1 << 16;  // deeper than any co_stacksize: not a stack
}  // namespace

uint64_t FrameReader::codeOf(uint64_t frame) {
    FrameBytes bytes;
    if (!readFrameBytes(frame, &bytes)) return 0;
    auto code = codeOf(bytes);
    if (!code || !*code || !isCodeObject(*code)) return 0;
    return *code;
}

uint64_t FrameReader::globals(uint64_t frame) {
    if (layout_.frameGlobals == kAbsent) return 0;
    return memory_.readPointer(frame + layout_.frameGlobals).value_or(0);
}

FrameReader::LocalsShape FrameReader::readLocalsShape(uint64_t code) {
    LocalsShape shape;
    auto names = [&](int64_t field) -> std::vector<uint64_t> {
        if (field == kAbsent) return {};
        auto tuple = memory_.readPointer(code + field);
        if (!tuple) return {};
        return objects_.tupleItems(*tuple, kMaxLocalsplus).value_or(std::vector<uint64_t>{});
    };
    auto flags = layout_.codeFlags != kAbsent ? memory_.readValue<int32_t>(code + layout_.codeFlags).value_or(0) : 0;
    auto argcount = layout_.codeArgcount != kAbsent ? memory_.readValue<int32_t>(code + layout_.codeArgcount).value_or(0) : 0;
    auto kwonly = layout_.codeKwonlyArgcount != kAbsent ? memory_.readValue<int32_t>(code + layout_.codeKwonlyArgcount).value_or(0) : 0;
    int64_t nargs = int64_t(argcount) + kwonly + ((flags & kCoVarargs) ? 1 : 0) + ((flags & kCoVarkeywords) ? 1 : 0);
    if (layout_.minor <= 10) {
        auto varnames = names(layout_.codeVarnames), cellvars = names(layout_.codeCellvars), freevars = names(layout_.codeFreevars);
        int32_t nlocals = layout_.codeNlocals != kAbsent ? memory_.readValue<int32_t>(code + layout_.codeNlocals).value_or(-1) : -1;
        if (nlocals < 0 || static_cast<size_t>(nlocals) > varnames.size()) nlocals = static_cast<int32_t>(varnames.size());
        size_t total = std::min(nlocals + cellvars.size() + freevars.size(), kMaxLocalsplus);
        shape.slots.resize(total);
        for (size_t i = 0; i < total; ++i) {
            LocalSlot& slot = shape.slots[i];
            if (i < static_cast<size_t>(nlocals)) {
                slot.nameObject = varnames[i];
                slot.kind = static_cast<int64_t>(i) < nargs ? "arg" : "local";
            } else if (i < nlocals + cellvars.size()) {
                slot.nameObject = cellvars[i - nlocals];
                slot.kind = "cell";
                slot.throughCell = true;
            } else {
                slot.nameObject = freevars[i - nlocals - cellvars.size()];
                slot.kind = "free";
                slot.throughCell = true;
            }
        }
        shape.readable = true;
        return shape;
    }
    auto names311 = names(layout_.codeLocalsplusNames);
    auto kindsObject = layout_.codeLocalsplusKinds != kAbsent ? memory_.readPointer(code + layout_.codeLocalsplusKinds) : std::nullopt;
    auto kinds = kindsObject ? readPyBytes(memory_, layout_, *kindsObject, kMaxLocalsplus) : std::nullopt;
    if (!kinds || kinds->size() != names311.size()) return shape;
    shape.slots.resize(names311.size());
    for (size_t i = 0; i < names311.size(); ++i) {
        uint8_t kind = (*kinds)[i];
        LocalSlot& slot = shape.slots[i];
        slot.nameObject = names311[i];
        slot.hidden = (kind & kFastHidden) != 0;
        bool arg = layout_.minor >= 14 ? (kind & kFastArgs) != 0 : static_cast<int64_t>(i) < nargs;
        // A cell or free variable's slot holds its cell once MAKE_CELL / COPY_FREE_VARS ran.
        slot.throughCell = (kind & (kFastCell | kFastFree)) != 0;
        slot.kind = arg ? "arg" : (kind & kFastFree) ? "free" : (kind & kFastCell) ? "cell" : "local";
        (void)kFastLocal;
    }
    shape.readable = true;
    return shape;
}

FrameReader::LocalsShape& FrameReader::localsShape(uint64_t code) {
    auto it = localsShapes_.find(code);
    if (it == localsShapes_.end()) it = localsShapes_.emplace(code, readLocalsShape(code)).first;
    return it->second;
}

const std::string& FrameReader::slotName(LocalSlot& slot) {
    if (!slot.name) slot.name = readPyUnicode(memory_, layout_, slot.nameObject, 256).value_or("?");
    return *slot.name;
}

std::vector<FrameLocal> FrameReader::locals(uint64_t frame, size_t maxLocals) {
    std::vector<FrameLocal> out;
    uint64_t code = codeOf(frame);
    if (!code || layout_.frameLocalsplus == kAbsent) return out;
    LocalsShape& shape = localsShape(code);
    if (!shape.readable) return out;
    std::vector<uint64_t> values(shape.slots.size());
    if (!memory_.readExact(frame + layout_.frameLocalsplus, values.data(), values.size() * 8)) return out;
    for (size_t i = 0; i < values.size() && out.size() < maxLocals; ++i) {
        LocalSlot& slot = shape.slots[i];
        uint64_t value = stackRefObject(values[i]);
        if (slot.hidden && !value) continue;
        if (slot.throughCell && value && objects_.typeName(value) == std::string("cell"))
            value = memory_.readPointer(value + layout_.cellRef).value_or(0);
        FrameLocal l;
        l.name = slotName(slot);
        l.kind = slot.kind;
        l.value = value;
        // <= 3.10: an argument that is also a cell (cell2arg): the cell holds it, the arg slot is null.
        if (layout_.minor <= 10 && l.kind == "cell") {
            auto same = std::find_if(out.begin(), out.end(), [&](const FrameLocal& o) { return o.name == l.name; });
            if (same != out.end()) {
                if (!same->value) same->value = l.value;
                continue;
            }
        }
        out.push_back(std::move(l));
    }
    return out;
}

uint64_t FrameReader::stackBase(uint64_t frame, uint64_t code) {
    if (layout_.minor <= 10) {
        return memory_.readPointer(frame + layout_.frameValueStack).value_or(0);
    }
    auto known = localsplusCounts_.find(code);
    if (known == localsplusCounts_.end()) {
        std::optional<size_t> count;
        size_t n = 0;
        auto tuple = memory_.readPointer(code + layout_.codeLocalsplusNames);
        if (tuple && objects_.tupleItems(*tuple, 0, &n)) count = n;
        known = localsplusCounts_.emplace(code, count).first;
    }
    if (!known->second) return 0;
    return frame + layout_.frameLocalsplus + *known->second * 8;
}

bool FrameReader::stackExtent(uint64_t frame, uint64_t* base, size_t* depth) {
    uint64_t code = codeOf(frame);
    if (!code || layout_.frameStackTop == kAbsent || layout_.frameLocalsplus == kAbsent) return false;
    *base = stackBase(frame, code);
    if (!*base) return false;
    int64_t d = -1;
    if (layout_.minor <= 9 || layout_.minor >= 14) {
        uint64_t top = memory_.readPointer(frame + layout_.frameStackTop).value_or(0);
        if (top >= *base) d = static_cast<int64_t>((top - *base) / 8);
    } else if (layout_.minor == 10) {
        d = memory_.readValue<int32_t>(frame + layout_.frameStackTop).value_or(-1);
    } else {
        // stacktop: an index into localsplus
        int32_t top = memory_.readValue<int32_t>(frame + layout_.frameStackTop).value_or(-1);
        uint64_t first = (*base - frame - layout_.frameLocalsplus) / 8;
        if (top >= 0 && static_cast<uint64_t>(top) >= first) d = static_cast<int64_t>(top - first);
    }
    if (d < 0 || d > kMaxStackDepth) return false;
    *depth = static_cast<size_t>(d);
    return true;
}

std::vector<uint64_t> FrameReader::valueStack(uint64_t frame, size_t maxItems) {
    uint64_t base = 0;
    size_t depth = 0;
    if (!stackExtent(frame, &base, &depth)) return {};
    std::vector<uint64_t> out(std::min(depth, maxItems));
    if (!memory_.readExact(base, out.data(), out.size() * 8)) return {};
    for (auto& v : out) v = stackRefObject(v);
    return out;
}

uint64_t FrameReader::stackRefObject(uint64_t value) const {
    if (layout_.minor >= 14) {
        if ((value & 3) == 3) return 0;  // a tagged int (Py_INT_TAG), not an object
        value &= ~uint64_t(3);
    }
    return value;
}

std::vector<FrameBlock> FrameReader::blockStack(uint64_t frame) {
    std::vector<FrameBlock> out;
    if (layout_.frameBlockCount == kAbsent || layout_.frameBlockStack == kAbsent) return out;
    auto count = memory_.readValue<int32_t>(frame + layout_.frameBlockCount);
    if (!count || *count <= 0 || *count > kMaxBlocks) return out;
    int32_t raw[kMaxBlocks * 3];
    if (!memory_.readExact(frame + layout_.frameBlockStack, raw, static_cast<size_t>(*count) * 12)) return out;
    for (size_t i = 0; i < static_cast<size_t>(*count); ++i) out.push_back({raw[i * 3], raw[i * 3 + 1], raw[i * 3 + 2]});
    return out;
}

std::optional<std::vector<uint8_t>> FrameReader::exceptionTable(uint64_t code) {
    if (layout_.codeExceptionTable == kAbsent || !code) return std::nullopt;
    auto table = memory_.readPointer(code + layout_.codeExceptionTable);
    if (!table) return std::nullopt;
    return readPyBytes(memory_, layout_, *table, 1 << 20);
}

namespace {
// gi_frame_state values (Include/internal/pycore_frame.h)
struct FrameStates {
    int created, suspendedYieldFrom, finished;  // finished: this and above (COMPLETED or CLEARED)
};
FrameStates frameStates(int minor) {
    if (minor >= 15) return {0, 2, 5};   // 3.15: CREATED 0 ... SUSPENDED_YIELD_FROM_LOCKED 3, EXECUTING 4, CLEARED 5
    if (minor >= 13) return {-3, -1, 1};  // 3.13, 3.14
    return {-2, 99, 1};                   // 3.11, 3.12: no YIELD_FROM state
}
}  // namespace

uint64_t FrameReader::generatorFrame(uint64_t gen) {
    if (layout_.minor <= 10) {
        if (layout_.genFrame == kAbsent) return 0;
        return memory_.readPointer(gen + layout_.genFrame).value_or(0);
    }
    if (layout_.genIframe == kAbsent || layout_.genFrameState == kAbsent) return 0;
    auto state = memory_.readValue<int8_t>(gen + layout_.genFrameState);
    if (!state || *state >= frameStates(layout_.minor).finished) return 0;
    if (layout_.minor >= 15 && *state == 5) return 0;
    return gen + layout_.genIframe;
}

uint64_t FrameReader::yieldFrom(uint64_t gen) {
    uint64_t frame = generatorFrame(gen);
    if (!frame) return 0;
    uint64_t code = codeOf(frame);
    if (!code) return 0;
    // 3.15's GET_ITER / GET_AWAITABLE leave the iterator under a null_or_index slot: SEND's
    // receiver is the second from the top (checked against gi_yieldfrom and cr_await).
    size_t depth = layout_.minor >= 15 ? 2 : 1;
    auto top = [&]() -> uint64_t {
        uint64_t base = 0;
        size_t items = 0;
        if (!stackExtent(frame, &base, &items) || items < depth) return 0;
        return stackRefObject(memory_.readPointer(base + (items - depth) * 8).value_or(0));
    };
    if (layout_.minor <= 10) {
        // The next instruction after f_lasti is YIELD_FROM (72 in 3.8 - 3.10)
        constexpr uint8_t kYieldFrom = 72;
        if (layout_.minor <= 9 && !memory_.readPointer(frame + layout_.frameStackTop).value_or(0)) return 0;
        int32_t lasti = memory_.readValue<int32_t>(frame + layout_.frameInstr).value_or(-1);
        if (lasti < 0 || layout_.codeCode == kAbsent) return 0;
        int64_t next = layout_.minor >= 10 ? (int64_t(lasti) + 1) * 2 : int64_t(lasti) + 2;
        auto co = memory_.readPointer(code + layout_.codeCode);
        if (!co) return 0;
        auto size = memory_.readValue<int64_t>(*co + layout_.bytesSize);
        if (!size || next >= *size) return 0;
        auto op = memory_.readValue<uint8_t>(*co + layout_.bytesData + next);
        if (!op || *op != kYieldFrom) return 0;
        return top();
    }
    auto state = memory_.readValue<int8_t>(gen + layout_.genFrameState);
    if (!state) return 0;
    FrameStates states = frameStates(layout_.minor);
    if (layout_.minor >= 13) {
        bool yieldingFrom = *state == states.suspendedYieldFrom || (layout_.minor >= 15 && *state == 3);
        return yieldingFrom ? top() : 0;
    }
    if (*state == states.created) return 0;
    // 3.11, 3.12: prev_instr[1] is RESUME (151; 3.11's RESUME_QUICK 150, 3.12's
    // INSTRUMENTED_RESUME 240) with oparg >= 2 (after a yield from / await)
    uint64_t prev = memory_.readPointer(frame + layout_.frameInstr).value_or(0);
    if (!prev) return 0;
    auto next = memory_.readValue<uint16_t>(prev + 2);
    if (!next) return 0;
    uint8_t op = *next & 0xff, arg = *next >> 8;
    bool resume = op == 151 || (layout_.minor == 11 && op == 150) || (layout_.minor == 12 && op == 240);
    if (!resume || arg < 2) return 0;
    return top();
}

}  // namespace pytstates
