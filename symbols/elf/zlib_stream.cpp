// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/zlib_stream.h"

#include <algorithm>

namespace pytstates {

namespace {

constexpr size_t kChunk = size_t{64} << 10;  // compressed bytes per read

// A zlib stream's header (RFC 1950): deflate, no preset dictionary.
bool zlibHeader(const unsigned char* h) {
    return (h[0] & 0x0f) == 8 && (h[0] >> 4) <= 7 && ((h[0] << 8) | h[1]) % 31 == 0 && !(h[1] & 0x20);
}

}  // namespace

ZlibStream::~ZlibStream() {
    if (open_) inflateEnd(&z_);
}

bool ZlibStream::start(Read read, uint64_t offset, uint64_t size, uint64_t plain) {
    if (open_) return false;
    unsigned char header[2];
    if (size < 2 || !read(offset, header, 2) || !zlibHeader(header) || inflateInit2(&z_, -15) != Z_OK) return false;
    open_ = true;
    read_ = std::move(read);
    inOffset_ = offset + 2;  // raw deflate after the header
    inLeft_ = size - 2;
    plain_ = plain;
    chunk_.resize(kChunk);
    return true;
}

size_t ZlibStream::inflateSome(unsigned char* out, size_t room) {
    size_t produced = 0;
    while (open_ && !failed_ && !ended_ && produced < room && done_ < plain_) {
        if (z_.avail_in == 0) {
            size_t n = static_cast<size_t>(std::min<uint64_t>(inLeft_, chunk_.size()));
            if (n == 0 || !read_(inOffset_, chunk_.data(), n)) {
                failed_ = true;
                break;
            }
            inOffset_ += n;
            inLeft_ -= n;
            z_.next_in = chunk_.data();
            z_.avail_in = static_cast<uInt>(n);
        }
        size_t want = static_cast<size_t>(std::min<uint64_t>(room - produced, plain_ - done_));
        want = std::min<size_t>(want, 1u << 30);  // zlib counts in 32 bits
        z_.next_out = out + produced;
        z_.avail_out = static_cast<uInt>(want);
        uInt inBefore = z_.avail_in;
        int r = inflate(&z_, Z_NO_FLUSH);
        size_t got = want - z_.avail_out;
        produced += got;
        done_ += got;
        if (r == Z_STREAM_END) {
            ended_ = true;
            failed_ = done_ != plain_;
        } else if ((r != Z_OK && r != Z_BUF_ERROR) || (got == 0 && z_.avail_in == inBefore)) {
            failed_ = true;
        }
    }
    return produced;
}

}  // namespace pytstates
