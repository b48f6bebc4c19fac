// SPDX-License-Identifier: Apache-2.0
// libFuzzer: arbitrary bytes as an ELF core. CoreFile must throw std::runtime_error or give a
// core whose every read stays inside the file, never crash or hang.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "symbols/core/core_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = "/dev/shm/pytstates-fuzz-core-" + std::to_string(getpid());
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    try {
        pytstates::CoreFile core(path);
        unsigned char buf[64];
        for (const auto& t : core.threads()) core.read(t.threadPointer, buf, sizeof buf);
        for (const auto& s : core.segments()) {
            core.read(s.vaddr, buf, sizeof buf);
            core.read(s.vaddr + s.filesz - 1, buf, sizeof buf);
            core.leftOutFrom(s.vaddr + s.filesz);
        }
        for (const auto& m : core.mappedFiles()) core.read(m.start, buf, 8);
    } catch (const std::runtime_error&) {
    }
    return 0;
}
