// SPDX-License-Identifier: Apache-2.0
#include "symbols/glibc/pthread_keys.h"

#include <algorithm>
#include <regex>

#include "symbols/modules/module_files.h"

namespace pytstates {

namespace {

struct Descriptor {
    uint32_t bits, count, offset;
};

// A _thread_db_<struct>_<field> descriptor: uint32_t[3] = {size in bits, elements, offset}.
std::optional<Descriptor> readDescriptor(const Target& target, const LoadedModule& libc, const char* name) {
    auto sym = findModuleSymbol(libc, name);
    if (!sym) return std::nullopt;
    uint32_t raw[3];
    if (!target.readExact(libc.bias + sym->value, raw, sizeof raw)) return std::nullopt;
    return Descriptor{raw[0], raw[1], raw[2]};
}

std::optional<uint32_t> readSizeDescriptor(const Target& target, const LoadedModule& libc, const char* name) {
    auto sym = findModuleSymbol(libc, name);
    if (!sym) return std::nullopt;
    return target.readValue<uint32_t>(libc.bias + sym->value);
}

bool isLibc(const std::string& path) {
    static const std::regex libcName(R"((^|/)libc(\.so\.6|-[0-9.]+\.so)$)");
    return std::regex_search(path, libcName);
}

}  // namespace

std::vector<GlibcKeys> findGlibcKeys(const Target& target) {
    std::vector<GlibcKeys> out;
    for (const auto& mod : target.modules()) {
        if (!isLibc(mod.path)) continue;
        auto table = findModuleSymbol(mod, "__pthread_keys");
        if (!table) continue;
        GlibcKeys k;
        k.linkMapNamespace = mod.linkMapNamespace;
        k.libcPath = mod.path;
        k.keysTable = mod.bias + table->value;
        k.source = "table";
        auto specific = readDescriptor(target, mod, "_thread_db_pthread_specific");
        auto dataSeq = readDescriptor(target, mod, "_thread_db_pthread_key_data_seq");
        auto dataData = readDescriptor(target, mod, "_thread_db_pthread_key_data_data");
        auto structSeq = readDescriptor(target, mod, "_thread_db_pthread_key_struct_seq");
        auto keys = readDescriptor(target, mod, "_thread_db___pthread_keys");
        auto level2 = readDescriptor(target, mod, "_thread_db_pthread_key_data_level2_data");
        auto dtv = readDescriptor(target, mod, "_thread_db_pthread_dtvp");
        auto dataSize = readSizeDescriptor(target, mod, "_thread_db_sizeof_pthread_key_data");
        auto structSize = readSizeDescriptor(target, mod, "_thread_db_sizeof_pthread_key_struct");
        if (specific && dataSeq && dataData && structSeq && dataSize && structSize) {
            k.specificOffset = specific->offset;
            k.keyDataSeq = dataSeq->offset;
            k.keyDataData = dataData->offset;
            k.keyStructSeq = structSeq->offset;
            k.keyDataSize = *dataSize;
            k.keyStructSize = *structSize;
            if (keys && keys->count) k.keysMax = keys->count;
            if (level2 && level2->count) k.secondLevelSize = level2->count;
            if (dtv) k.dtvOffset = dtv->offset;
            if (auto modid = readDescriptor(target, mod, "_thread_db_link_map_l_tls_modid")) k.linkMapTlsModid = modid->offset;
            if (auto off = readDescriptor(target, mod, "_thread_db_link_map_l_tls_offset")) k.linkMapTlsOffset = off->offset;
            k.source = "thread_db";
        }
        out.push_back(k);
    }
    std::stable_sort(out.begin(), out.end(), [](const GlibcKeys& a, const GlibcKeys& b) {
        return (a.linkMapNamespace < 0 ? 1L << 30 : a.linkMapNamespace) < (b.linkMapNamespace < 0 ? 1L << 30 : b.linkMapNamespace);
    });
    return out;
}

KeySlot readKeySlot(const Memory& memory, const GlibcKeys& keys, uint64_t pthread, uint32_t key) {
    KeySlot slot;
    if (key >= keys.keysMax || !pthread) return slot;
    auto keySeq = memory.readValue<uint64_t>(keys.keysTable + uint64_t(key) * keys.keyStructSize + keys.keyStructSeq);
    if (!keySeq) return slot;
    slot.keySeq = *keySeq;
    // specific[0] points at specific_1stblock for every thread, so one path serves all keys.
    auto block = memory.readPointer(pthread + keys.specificOffset + 8ull * (key / keys.secondLevelSize));
    if (!block) return slot;
    if (!*block) {
        slot.status = (*keySeq & 1) ? KeySlot::Status::Unset : KeySlot::Status::KeyNotInUse;
        return slot;
    }
    uint64_t entry = *block + uint64_t(key % keys.secondLevelSize) * keys.keyDataSize;
    auto seq = memory.readValue<uint64_t>(entry + keys.keyDataSeq);
    auto data = memory.readPointer(entry + keys.keyDataData);
    if (!seq || !data) return slot;
    slot.slotSeq = *seq;
    slot.value = *data;
    if (!(*keySeq & 1)) slot.status = KeySlot::Status::KeyNotInUse;  // odd seq: the key is in use
    else if (!*data) slot.status = KeySlot::Status::Unset;
    else if (*seq != *keySeq) slot.status = KeySlot::Status::Stale;
    else slot.status = KeySlot::Status::Set;
    return slot;
}

const char* describe(KeySlot::Status status) {
    switch (status) {
        case KeySlot::Status::Unset: return "unset";
        case KeySlot::Status::Set: return "set";
        case KeySlot::Status::Stale: return "stale (slot of a deleted key)";
        case KeySlot::Status::KeyNotInUse: return "key not in use";
        case KeySlot::Status::Unreadable: return "unreadable";
    }
    return "?";
}

}  // namespace pytstates
