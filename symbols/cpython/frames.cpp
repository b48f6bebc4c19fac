// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/frames.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "symbols/cpython/line_table.h"
#include "symbols/cpython/python_objects.h"
#include "symbols/text/hex_address.h"

namespace pytstates {

namespace {
constexpr size_t kMaxFramesWalked = 4096;  // a longer chain is corrupt or cyclic
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

FrameReader::FrameReader(const Memory& memory, const CPythonLayout& layout) : memory_(memory), layout_(layout) {
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
    for (size_t i = 0; frame && i < kMaxFramesWalked && seen.insert(frame); ++i) {
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
        out->line = lineAt(code, static_cast<int>(instr - first),
                           [&](int offset) { return lineFromLocationTable(*table, firstLine, offset); });
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
    frames.reserve(std::min<size_t>(maxFrames, 64));
    SeenAddresses seen;
    FrameBytes bytes;
    for (size_t walked = 0; frame && frames.size() < maxFrames; ++walked) {
        if (walked >= kMaxFramesWalked || !seen.insert(frame)) {
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

}  // namespace pytstates
