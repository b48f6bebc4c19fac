// SPDX-License-Identifier: Apache-2.0
// Cores compressed as systemd-coredump writes them (zstd by default; lz4 and xz on other setups)
// or as people do by hand (gzip), told apart by their magic numbers and decompressed with Debian's
// libzstd, liblz4, liblzma and zlib.
//
// A core is read at random offsets and systemd's zstd cores are one frame (no seek table), so the
// core is decompressed once, streaming, into an unlinked temporary file: memory stays at the
// codec's window (a few MiB) whatever the core's size, and the kernel's page cache, not
// pytstates, holds what is read. scripts/bench measures it beside the uncompressed core.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace pytstates {

enum class CoreCompression { None, Zstd, Lz4, Xz, Gzip };

const char* compressionName(CoreCompression kind);

// By the first bytes of the file.
CoreCompression detectCompression(const unsigned char* head, size_t size);

// What the decompression tells as it goes: a line for a person (stderr in the CLI).
using ProgressLine = std::function<void(const std::string&)>;

struct DecompressedCore {
    int fd = -1;  // the unlinked temporary file, positioned anywhere
    // Decoding stops where the core's own headers say it ends (the ELF header, program and section
    // header tables, every segment's file bytes): a stream holding more (a core followed by
    // gigabytes of anything) is not decoded past that. When it did hold more: that offset.
    uint64_t ignoredFrom = 0;
};

// Decompresses the file open at `in` (its name in messages: `name`) into an unlinked temporary
// file in $TMPDIR (else /tmp). Once decoding has taken a second, it is told: on a terminal in the
// progress line (progress.h), else in lines to `progress`: where it goes, every GiB, and the end.
// Decoding is bounded: by `maxDecoded` bytes (--max-decoded), else (0) by the space free in the
// temporary directory. A core whose headers need more is refused before any of it is written (a
// small file that claims 16 GiB and decodes to anything), and so is a stream that decodes past
// the bound. Throws std::runtime_error with one line: over the bound, a truncated or corrupt
// stream, a full disk.
DecompressedCore decompressToTemporaryFile(int in, CoreCompression kind, const std::string& name, const ProgressLine& progress,
                                           uint64_t maxDecoded = 0);

}  // namespace pytstates
