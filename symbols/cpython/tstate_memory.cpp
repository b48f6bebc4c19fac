// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/tstate_memory.h"

#include "symbols/cpython/python_objects.h"
#include "symbols/glibc/malloc_chunk.h"

namespace pytstates {

TstateMemory lookAtTstateMemory(const Target& target, const std::vector<Runtime>& runtimes, size_t runtime, uint64_t p) {
    const auto& l = runtimes.at(runtime < runtimes.size() ? runtime : 0).layout;
    TstateMemory look;
    uint64_t head;
    if (!target.readExact(p, &head, sizeof head)) {
        look.kind = TstateMemory::Kind::Unreadable;
        return look;
    }
    auto interp = target.readPointer(p + l.tstateInterp);
    auto threadId = target.readPointer(p + l.tstateThreadId);
    auto prev = target.readPointer(p + l.tstatePrev);
    auto next = target.readPointer(p + l.tstateNext);
    const Interpreter* owner = nullptr;   // the interpreter its interp field names
    const Interpreter* holder = nullptr;  // the interpreter whose own state holds this memory
    for (const auto& r : runtimes)
        for (const auto& i : r.interpreters) {
            if (interp && *interp == i.address) owner = &i;
            if (r.layout.interpSize > 0 && p >= i.address && p < i.address + static_cast<uint64_t>(r.layout.interpSize)) holder = &i;
        }
    std::optional<int> forThread;
    for (const auto& t : target.threads())
        if (threadId && *threadId && *threadId == t.pthread) forThread = t.lwp;
    if (looksLikeFreedTcacheEntry(target, p)) {
        look.kind = TstateMemory::Kind::FreedTcache;
        if (owner) {
            look.interp = owner->address;
            look.lwp = forThread;
        }
    } else if (looksLikeFreedBinChunk(target, p)) {
        look.kind = TstateMemory::Kind::FreedChunk;
    } else if (interp && !*interp && prev && !*prev && next && !*next && threadId && !*threadId) {
        look.kind = TstateMemory::Kind::Reset;
        if (holder) look.inside = holder->address;
    } else if (owner) {
        look.kind = TstateMemory::Kind::StillValid;
        look.interp = owner->address;
        look.lwp = forThread;
    } else {
        look.kind = TstateMemory::Kind::Reused;
        look.type = readPlausibleTypeName(target, l, p);
    }
    return look;
}

namespace {

// Whether the memory at p is still a whole thread state of `interp` for the thread whose struct
// pthread is `pthread`: its own fields agree, its neighbours are NULL or thread states of the
// same interpreter, and it is not on a malloc free list.
bool stillAThreadState(const Target& target, uint64_t p, const CPythonLayout& l, uint64_t interp, uint64_t pthread) {
    auto owner = target.readPointer(p + l.tstateInterp);
    auto threadId = target.readPointer(p + l.tstateThreadId);
    if (!owner || *owner != interp || !threadId || *threadId != pthread) return false;
    if (looksLikeFreedTcacheEntry(target, p)) return false;
    for (int64_t link : {l.tstatePrev, l.tstateNext}) {
        auto neighbour = target.readPointer(p + link);
        if (!neighbour) return false;
        if (*neighbour && target.readPointer(*neighbour + l.tstateInterp).value_or(0) != interp) return false;
    }
    return true;
}

}  // namespace

std::vector<int> threadsDeletingTstate(const Target& target, const CPythonLayout& layout, uint64_t p, uint64_t interp) {
    std::vector<int> out;
    auto threadId = target.readPointer(p + layout.tstateThreadId);
    for (const auto& t : target.threads())
        if (threadId && t.pthread == *threadId && stillAThreadState(target, p, layout, interp, t.pthread)) out.push_back(t.lwp);
    return out;
}

bool hasProcessWideCurrent(const CPythonLayout& layout) { return layout.runtimeTstateCurrent != kAbsent; }

bool tstateRecordsThread(const Memory& memory, const CPythonLayout& layout, uint64_t tstate, uint64_t pthread) {
    return memory.readValue<uint64_t>(tstate + layout.tstateThreadId).value_or(0) == pthread;
}

}  // namespace pytstates
