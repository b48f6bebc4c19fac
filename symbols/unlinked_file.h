// SPDX-License-Identifier: Apache-2.0
// A temporary file that has no name from the start (O_TMPFILE; where the file system has none, made
// and unlinked at once): nothing is left behind whatever happens to pytstates. A decompressed core
// (symbols/core/compressed_core) and decompressed debug files (symbols/elf/plain_debug_file) go there.
#pragma once

#include <string>

namespace pytstates {

// A read-write descriptor of a new unlinked file in `dir`; -1 (errno set) when none can be made.
int openUnlinkedFile(const std::string& dir, const std::string& namePrefix);

}  // namespace pytstates
