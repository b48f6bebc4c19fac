// SPDX-License-Identifier: Apache-2.0
// This test process's own memory as a Memory, read with process_vm_readv so that a bad address
// fails instead of faulting: unit tests build real structures and read them back through it.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include "symbols/memory.h"

namespace pytstates {

class OwnMemory : public Memory {
public:
    size_t read(uint64_t addr, void* buf, size_t len) const override {
        iovec local{buf, len}, remote{reinterpret_cast<void*>(addr), len};
        ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        return got < 0 ? 0 : static_cast<size_t>(got);
    }
};

}  // namespace pytstates
