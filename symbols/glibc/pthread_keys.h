// SPDX-License-Identifier: Apache-2.0
// glibc thread-specific data (pthread_key_create / pthread_getspecific), read the way
// nptl/pthread_getspecific.c does, with offsets from glibc's own _thread_db_* descriptors
// (exported by libc.so.6 since glibc 2.34), DWARF-free. One GlibcKeys per libc copy: a
// dlmopen namespace has its own __pthread_keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbols/memory.h"
#include "symbols/target.h"

namespace pytstates {

struct GlibcKeys {
    long linkMapNamespace = 0;
    std::string libcPath;
    uint64_t keysTable = 0;          // &__pthread_keys[0]
    uint32_t keysMax = 1024;         // PTHREAD_KEYS_MAX
    uint32_t keyStructSize = 16;     // sizeof(struct pthread_key_struct)
    uint32_t keyStructSeq = 0;
    uint32_t specificOffset = 1296;  // struct pthread.specific[] (array of 2nd-level block pointers)
    uint32_t secondLevelSize = 32;   // PTHREAD_KEY_2NDLEVEL_SIZE
    uint32_t keyDataSize = 16;       // sizeof(struct pthread_key_data)
    uint32_t keyDataSeq = 0;
    uint32_t keyDataData = 8;
    uint32_t dtvOffset = 8;          // struct pthread.header.dtv
    uint32_t linkMapTlsModid = 1152; // struct link_map.l_tls_modid (changes between glibc versions)
    uint32_t linkMapTlsOffset = 1144;
    std::string source;              // "thread_db" or "table"
};

// Every libc copy in the target, namespace 0 first.
std::vector<GlibcKeys> findGlibcKeys(const Target& target);

struct KeySlot {
    enum class Status { Unset, Set, Stale, KeyNotInUse, Unreadable };
    Status status = Status::Unreadable;
    uint64_t value = 0;  // the data pointer, also for a stale slot
    uint64_t slotSeq = 0, keySeq = 0;
};

// pthread_getspecific(key) for the thread whose struct pthread is at `pthread`, without
// trusting a slot whose seq is not the key's current seq.
KeySlot readKeySlot(const Memory& memory, const GlibcKeys& keys, uint64_t pthread, uint32_t key);

const char* describe(KeySlot::Status status);

}  // namespace pytstates
