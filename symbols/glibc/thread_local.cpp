#include "symbols/glibc/thread_local.h"

namespace pytstates {

namespace {
constexpr uint64_t kDtvUnallocated = ~uint64_t(0);  // TLS_DTV_UNALLOCATED
constexpr int64_t kForcedDynamicTlsOffset = -1;     // FORCED_DYNAMIC_TLS_OFFSET (x86_64)
}  // namespace

ThreadLocal readThreadLocal(const Target& target, const GlibcKeys& glibc, const LoadedModule& module,
                            uint64_t variableOffset, uint64_t tp) {
    ThreadLocal out;
    if (!module.linkMapAddress || !tp) return out;
    auto modid = target.readValue<uint64_t>(module.linkMapAddress + glibc.linkMapTlsModid);
    auto tlsOffset = target.readValue<int64_t>(module.linkMapAddress + glibc.linkMapTlsOffset);
    auto dtv = target.readPointer(tp + glibc.dtvOffset);
    if (!modid || !tlsOffset || !dtv || !*modid || !*dtv) return out;
    uint64_t block = 0;
    auto slots = target.readValue<uint64_t>(*dtv - 16);  // dtv[-1].counter: slots allocated
    if (slots && *modid <= *slots) {
        auto val = target.readPointer(*dtv + 16 * *modid);
        if (!val) return out;
        if (*val && *val != kDtvUnallocated) block = *val;
    }
    if (!block && *tlsOffset != 0 && *tlsOffset != kForcedDynamicTlsOffset)
        block = tp - static_cast<uint64_t>(*tlsOffset);  // static TLS sits below the thread pointer
    if (!block) {
        out.status = ThreadLocal::Status::NotAllocated;
        return out;
    }
    out.address = block + variableOffset;
    auto value = target.readPointer(out.address);
    if (!value) return out;
    out.value = *value;
    out.status = ThreadLocal::Status::Value;
    return out;
}

ThreadLocal readThreadPointerRelative(const Target& target, int64_t offset, uint64_t threadPointer) {
    ThreadLocal out;
    if (!threadPointer) return out;
    out.address = threadPointer + static_cast<uint64_t>(offset);
    auto value = target.readPointer(out.address);
    if (!value) return out;
    out.value = *value;
    out.status = ThreadLocal::Status::Value;
    return out;
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
