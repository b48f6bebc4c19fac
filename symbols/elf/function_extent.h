// SPDX-License-Identifier: Apache-2.0
// The bytes of a function that has no symbol (a stripped build's static function, reached by a
// tail call from one that has), told by the module's call-frame information: compilers emit one
// .eh_frame FDE per function (per hot or cold part), and .eh_frame_hdr lists where each begins.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "symbols/elf/elf_file.h"

namespace pytstates {

// [start, end) link-time addresses of the code from `vaddr`, when an FDE begins exactly there:
// up to where the next FDE begins (the next function; padding between them holds no
// instruction that matters). nullopt when the file has no .eh_frame_hdr search table (or one
// in an encoding other than the one GCC and clang write), or no FDE starts at vaddr.
std::optional<std::pair<uint64_t, uint64_t>> functionExtentAt(const ElfFile& elf, uint64_t vaddr);

}  // namespace pytstates
