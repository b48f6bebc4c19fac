// SPDX-License-Identifier: Apache-2.0
#include "symbols/glibc/thread_local.h"

namespace pytstates {

namespace {
constexpr uint64_t kDtvUnallocated = ~uint64_t(0);  // TLS_DTV_UNALLOCATED
// FORCED_DYNAMIC_TLS_OFFSET: -1 with the TCB at the thread pointer (x86_64), -2 with the DTV
// there (aarch64).
int64_t forcedDynamicTlsOffset(const Target& target) { return target.arch().tlsVariantI ? -2 : -1; }

// The variable at its address: its value, or its address alone when that is unreadable.
ThreadLocal valueAt(const Target& target, uint64_t address) {
    ThreadLocal out;
    out.address = address;
    auto value = target.readPointer(address);
    if (!value) return out;
    out.value = *value;
    out.status = ThreadLocal::Status::Value;
    return out;
}
}  // namespace

ThreadLocal readThreadLocal(const Target& target, const GlibcKeys& glibc, const LoadedModule& module,
                            uint64_t variableOffset, const OsThread& thread) {
    ThreadLocal out;
    uint64_t tp = thread.threadPointer;
    if (!module.linkMapAddress || !tp || !thread.pthread) return out;
    auto modid = target.readValue<uint64_t>(module.linkMapAddress + glibc.linkMapTlsModid);
    auto tlsOffset = target.readValue<int64_t>(module.linkMapAddress + glibc.linkMapTlsOffset);
    auto dtv = target.readPointer(thread.pthread + glibc.dtvOffset);
    if (!modid || !tlsOffset || !dtv || !*modid || !*dtv) return out;
    uint64_t block = 0;
    auto slots = target.readValue<uint64_t>(*dtv - 16);  // dtv[-1].counter: slots allocated
    if (slots && *modid <= *slots) {
        auto val = target.readPointer(*dtv + 16 * *modid);
        if (!val) return out;
        if (*val && *val != kDtvUnallocated) block = *val;
    }
    // l_tls_offset: how far the static block is from the thread pointer, below it (variant II)
    // or above it (variant I).
    if (!block && *tlsOffset != 0 && *tlsOffset != forcedDynamicTlsOffset(target))
        block = target.arch().tlsVariantI ? tp + static_cast<uint64_t>(*tlsOffset) : tp - static_cast<uint64_t>(*tlsOffset);
    if (!block) {
        out.status = ThreadLocal::Status::NotAllocated;
        return out;
    }
    return valueAt(target, block + variableOffset);
}

ThreadLocal readThreadPointerRelative(const Target& target, int64_t offset, uint64_t threadPointer) {
    if (!threadPointer) return {};
    return valueAt(target, threadPointer + static_cast<uint64_t>(offset));
}

const char* describe(ThreadLocal::Status status) {
    switch (status) {
        case ThreadLocal::Status::Value: return "value";
        case ThreadLocal::Status::NotAllocated: return "not allocated for this thread";
        case ThreadLocal::Status::Unreadable: return "unreadable";
    }
    return "?";
}

}  // namespace pytstates
