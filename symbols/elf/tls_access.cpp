// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/tls_access.h"

#include <elf.h>

#include <cstring>

#include "symbols/elf/elf_file.h"
#include "symbols/elf/tls_access_aarch64.h"

namespace pytstates {

namespace {

constexpr size_t kWindow = 64;  // the access sits in the first instructions of a tiny accessor

int32_t rel32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

bool match(const uint8_t* code, size_t n, size_t at, std::initializer_list<uint8_t> bytes) {
    if (at + bytes.size() > n) return false;
    size_t i = 0;
    for (uint8_t b : bytes)
        if (code[at + i++] != b) return false;
    return true;
}

}  // namespace

std::optional<TlsLocation> decodeTlsAccess(const Memory& memory, const LoadedModule& module, uint64_t functionVaddr) {
    if (!module.elf) return std::nullopt;
    if (module.elf->machine() == EM_AARCH64) return decodeTlsAccessAarch64(memory, module, functionVaddr);
    uint8_t code[kWindow];
    size_t n = module.elf->readVaddr(functionVaddr, code, sizeof code);
    for (size_t i = 0; i < n; ++i) {
        // general-dynamic: data16 lea tls_index(%rip),%rdi; data16 data16 rex.W call __tls_get_addr; mov (%rax),%rax
        // tls_index = {module id (relocated), offset (written by the static linker)}
        if (match(code, n, i, {0x66, 0x48, 0x8d, 0x3d}) && match(code, n, i + 8, {0x66, 0x66, 0x48, 0xe8})) {
            uint64_t tlsIndex = functionVaddr + i + 8 + rel32(code + i + 4);
            int64_t offset;
            if (module.elf->readVaddr(tlsIndex + 8, &offset, 8) != 8) return std::nullopt;
            int64_t extra = 0;
            if (match(code, n, i + 16, {0x48, 0x8b, 0x40})) extra = static_cast<int8_t>(code[i + 19]);
            return TlsLocation{TlsLocation::Kind::ModuleOffset, offset + extra, "general-dynamic"};
        }
        // local-dynamic: lea tls_index(%rip),%rdi; call __tls_get_addr; mov disp(%rax),%rax
        if (match(code, n, i, {0x48, 0x8d, 0x3d}) && match(code, n, i + 7, {0xe8})) {
            if (match(code, n, i + 12, {0x48, 0x8b, 0x40}) || match(code, n, i + 12, {0x48, 0x8d, 0x40}))
                return TlsLocation{TlsLocation::Kind::ModuleOffset, static_cast<int8_t>(code[i + 15]), "local-dynamic"};
            if (match(code, n, i + 12, {0x48, 0x8b, 0x80}) || match(code, n, i + 12, {0x48, 0x8d, 0x80}))
                return TlsLocation{TlsLocation::Kind::ModuleOffset, rel32(code + i + 15), "local-dynamic"};
        }
        // local-exec (executables): mov %fs:disp32,%rax
        if (match(code, n, i, {0x64, 0x48, 0x8b, 0x04, 0x25}))
            return TlsLocation{TlsLocation::Kind::ThreadPointerOffset, rel32(code + i + 5), "local-exec"};
        // initial-exec: mov got(%rip),%rax; mov %fs:(%rax),%rax -- the GOT slot holds the tp offset
        if (match(code, n, i, {0x48, 0x8b, 0x05}) && match(code, n, i + 7, {0x64, 0x48, 0x8b, 0x00})) {
            uint64_t slot = module.bias + functionVaddr + i + 7 + rel32(code + i + 3);
            auto offset = memory.readValue<int64_t>(slot);
            if (!offset) return std::nullopt;
            return TlsLocation{TlsLocation::Kind::ThreadPointerOffset, *offset, "initial-exec"};
        }
    }
    return std::nullopt;
}

}  // namespace pytstates
