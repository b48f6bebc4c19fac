// SPDX-License-Identifier: Apache-2.0
// A debug file handed to libdw with its compressed sections already decompressed, in an unlinked
// temporary file. libdw 0.188 inflates every compressed .debug_* section into its heap when a
// Dwarf is opened (32 MB for python3.11's and libc's), though a backtrace reads only a few CUs,
// their line programs and ranges: mapped from a file, only the pages libdw reads count in the
// process's memory, and the kernel may drop them (a disk file's pages, written back).
#pragma once

#include <string>

namespace pytstates {

// A read-only descriptor of a copy of the ELF file at `path` whose zlib-compressed sections
// (SHF_COMPRESSED) are stored decompressed, with the same section indices, symbols and program
// headers; -1 when the file has none, is not a 64-bit ELF file of this machine's byte order, is
// relocatable (ET_REL), or the temporary file cannot be written (the caller opens the file itself).
int openDecompressedCopy(const std::string& path);

}  // namespace pytstates
