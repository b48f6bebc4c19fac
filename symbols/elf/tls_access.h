// SPDX-License-Identifier: Apache-2.0
// Where a function's thread-local variable lives, recovered from the function's x86_64 code:
// stripped builds lose the TLS symbol (CPython's _Py_tss_tstate is static), but an exported
// accessor still reaches it through one of the TLS access sequences of the x86_64 ABI (or, in
// aarch64 code, of the aarch64 one: tls_access_aarch64.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "symbols/memory.h"
#include "symbols/target.h"

namespace pytstates {

struct TlsLocation {
    enum class Kind { ModuleOffset, ThreadPointerOffset };
    Kind kind = Kind::ModuleOffset;
    int64_t offset = 0;  // inside the module's TLS block, or relative to the thread pointer
    std::string how;     // "symbol", "general-dynamic", "local-dynamic", "initial-exec", "local-exec",
                         // "tls-descriptor" (aarch64)
};

// Decodes the access sequence in the first bytes of the function at link-time address
// `functionVaddr` of `module`; memory is used for initial-exec GOT slots filled at load time.
std::optional<TlsLocation> decodeTlsAccess(const Memory& memory, const LoadedModule& module, uint64_t functionVaddr);

}  // namespace pytstates
