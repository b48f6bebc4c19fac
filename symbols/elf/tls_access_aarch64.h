// SPDX-License-Identifier: Apache-2.0
// decodeTlsAccess for aarch64 code: the local-exec, initial-exec and TLS descriptor sequences
// (tls_access_aarch64.cpp lists them), from tpidr_el0 to the load of the variable.
#pragma once

#include "symbols/elf/tls_access.h"

namespace pytstates {

std::optional<TlsLocation> decodeTlsAccessAarch64(const Memory& memory, const LoadedModule& module, uint64_t functionVaddr);

}  // namespace pytstates
