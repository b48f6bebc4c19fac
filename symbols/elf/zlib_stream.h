// SPDX-License-Identifier: Apache-2.0
// The zlib stream (RFC 1950) of an ELF section compressed with ELFCOMPRESS_ZLIB, inflated step by
// step from bytes read in pieces, never held whole: TypeSections decompresses .debug_info as far
// as its lookups walk, plain_debug_file writes whole sections to a file. The stream's Adler-32 is
// not checked (a tenth of the time): libdw bounds-checks what it reads.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace pytstates {

class ZlibStream {
public:
    // Reads exactly len bytes at offset; false when it cannot.
    using Read = std::function<bool(uint64_t offset, void* buf, size_t len)>;

    ZlibStream() = default;
    ~ZlibStream();
    ZlibStream(const ZlibStream&) = delete;
    ZlibStream& operator=(const ZlibStream&) = delete;

    // The stream stored in [offset, offset + size), which decompresses to `plain` bytes. False
    // when its header is not zlib's deflate without a preset dictionary.
    bool start(Read read, uint64_t offset, uint64_t size, uint64_t plain);
    // Up to `room` more decompressed bytes into out, never past `plain`; how many (0 once the
    // stream is done, damaged or cut short: see complete()).
    size_t inflateSome(unsigned char* out, size_t room);
    uint64_t done() const { return done_; }
    uint64_t plain() const { return plain_; }
    bool complete() const { return !failed_ && done_ == plain_; }

private:
    Read read_;
    z_stream z_{};
    bool open_ = false, failed_ = false, ended_ = false;
    uint64_t inOffset_ = 0;  // the next compressed byte
    uint64_t inLeft_ = 0;    // compressed bytes not handed to zlib yet
    uint64_t plain_ = 0, done_ = 0;
    std::vector<unsigned char> chunk_;
};

}  // namespace pytstates
