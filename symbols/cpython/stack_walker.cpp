// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/stack_walker.h"

#include <algorithm>
#include <set>

namespace pytstates {

std::vector<PyFrame> StackWalker::fromFrame(uint64_t innermost, uint64_t outermost, size_t maxFrames, std::string* note) {
    if (!outermost) return frames_.readFrom(innermost, maxFrames, note);
    std::vector<PyFrame> out;
    // The chain is read whole (bounded) and cut at `outermost`: maxFrames counts the stack's own frames.
    for (auto& f : frames_.readFrom(innermost, kMaxPythonFrames, note)) {
        if (out.size() < maxFrames) out.push_back(f);
        if (f.address == outermost) break;
    }
    return out;
}

std::vector<StackWalker::Await> StackWalker::awaitChain(uint64_t coro, size_t maxLinks) {
    std::vector<Await> links;
    links.reserve(4);  // most chains: a task's coroutine and the one or two it awaits
    std::set<uint64_t> seen;
    while (coro && links.size() < maxLinks && seen.insert(coro).second) {
        auto type = objects_.typeName(coro);
        if (type != "coroutine" && type != "generator") break;
        Await link;
        link.coro = coro;
        link.frame = frames_.generatorFrame(coro);
        if (!link.frame) break;  // finished: no frame left
        auto read = frames_.readFrom(link.frame, 1, nullptr);
        if (read.empty()) break;
        link.shown = read.front();
        link.awaited = frames_.yieldFrom(coro);
        coro = link.awaited;
        links.push_back(std::move(link));
    }
    return links;
}

std::vector<PyFrame> StackWalker::framesOf(std::vector<Await>&& chain, size_t maxFrames) {
    std::vector<PyFrame> out;
    out.reserve(std::min(chain.size(), maxFrames));
    for (auto it = chain.rbegin(); it != chain.rend() && out.size() < maxFrames; ++it) out.push_back(std::move(it->shown));
    return out;
}

}  // namespace pytstates
