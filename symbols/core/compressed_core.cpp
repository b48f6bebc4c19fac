// SPDX-License-Identifier: Apache-2.0
#include "symbols/core/compressed_core.h"
#include "symbols/progress.h"
#include "symbols/unlinked_file.h"

#include <elf.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <lzma.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

namespace pytstates {

namespace {

constexpr size_t kChunk = 1 << 20;
constexpr size_t kZeroBlock = 64 << 10;
constexpr uint64_t kGiB = 1ull << 30;

// Decoding is told once it has taken this long: a second (PYTSTATES_PROGRESS_AFTER_MS, the CLI's
// progress line's test hook, sets it).
std::chrono::milliseconds tellAfter() {
    const char* ms = std::getenv("PYTSTATES_PROGRESS_AFTER_MS");
    return std::chrono::milliseconds(ms && *ms ? std::atol(ms) : 1000);
}

std::string temporaryDirectory() {
    const char* dir = std::getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

std::string sizeWords(uint64_t bytes) {
    char buf[32];
    if (bytes >= kGiB << 10) std::snprintf(buf, sizeof buf, "%.1f TiB", static_cast<double>(bytes) / (kGiB << 10));
    else if (bytes >= kGiB) std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / kGiB);
    else std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return buf;
}

// The unlinked file the core is decompressed into: gone from the file system from the start, so
// nothing is left behind whatever happens to pytstates.
int openTemporary(const std::string& dir) {
    int fd = openUnlinkedFile(dir, "pytstates-core-");
    if (fd < 0) throw std::runtime_error("cannot make a temporary file in " + dir + " for the decompressed core: " + std::strerror(errno) + " (set TMPDIR)");
    return fd;
}

// How much may be decoded, and how to say where that bound comes from.
struct Bound {
    uint64_t bytes = UINT64_MAX;
    std::string words;  // after "the core needs N decoded, ": "/tmp has 9.2 GiB free"
    std::string over;   // after "decodes to more than ": "the 9.2 GiB free in /tmp"
};

// Streams `in` through one codec into `out`, counting and telling.
class Decompression {
public:
    Decompression(int in, int out, std::string name, std::string dir, const ProgressLine& progress, Bound bound, std::string startWords)
        : in_(in), out_(out), name_(std::move(name)), dir_(std::move(dir)), progress_(progress), bound_(std::move(bound)),
          startWords_(std::move(startWords)) {}

    // Next compressed bytes; empty at the end of the file.
    size_t readInput(std::vector<unsigned char>& buf) {
        for (;;) {
            ssize_t n = ::read(in_, buf.data(), buf.size());
            if (n >= 0) {
                inBytes_ += static_cast<uint64_t>(n);
                return static_cast<size_t>(n);
            }
            if (errno != EINTR) throw std::runtime_error(name_ + ": cannot read: " + std::strerror(errno));
        }
    }

    // Blocks of zeros (untouched pages: most of a core's stacks and heaps) are skipped, not
    // written: the file is sparse and the disk sees only the rest. Nothing past the core's end.
    void write(const void* data, size_t len) {
        const char* p = static_cast<const char*>(data);
        remember(p, len);
        if (outBytes_ + len > end_) {
            if (len) beyond_ = true;
            len = outBytes_ < end_ ? static_cast<size_t>(end_ - outBytes_) : 0;
        }
        // A stream whose headers did not bound it (not a 64-bit core, its tables far in).
        if (len > bound_.bytes - std::min(bound_.bytes, outBytes_))
            throw std::runtime_error(name_ + ": the stream decodes to more than " + bound_.over + ": set TMPDIR or --max-decoded");
        while (len) {
            size_t block = std::min(len, kZeroBlock);
            if (block == kZeroBlock && isZero(p, block)) {
                if (lseek(out_, static_cast<off_t>(block), SEEK_CUR) < 0) fail(std::string("cannot seek in the temporary file: ") + std::strerror(errno));
                advance(p, len, block);
                continue;
            }
            ssize_t n = ::write(out_, p, block);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0)
                throw std::runtime_error(name_ + ": cannot write the decompressed core to " + dir_ + " after " + sizeWords(outBytes_) + ": " +
                                         std::strerror(n < 0 ? errno : ENOSPC) + " (set TMPDIR to a file system with room for it)");
            advance(p, len, static_cast<size_t>(n));
        }
    }

    // Whether the core's end is decoded: the codecs stop reading there.
    bool complete() const { return outBytes_ >= end_; }
    // The core's end decoded while the stream had more (output past it, or input not read).
    bool ignoredMore(uint64_t compressedSize) const { return complete() && (beyond_ || inBytes_ < compressedSize); }

    // The file's length, which skipped zeros at its end would otherwise leave short.
    void finish() {
        if (ftruncate(out_, static_cast<off_t>(outBytes_)) != 0)
            fail(std::string("cannot size the temporary file: ") + std::strerror(errno));
    }

    static bool isZero(const char* p, size_t n) {
        static const char zeros[kZeroBlock] = {};
        return std::memcmp(p, zeros, n) == 0;
    }

    void advance(const char*& p, size_t& len, size_t n) {
        p += n;
        len -= n;
        outBytes_ += n;
        tellHowFar();
    }

    // On a terminal: the progress line (which the front end shows once the run has taken a
    // second), kept up to date. Elsewhere, once decoding has taken a second: where it goes, then a
    // line every GiB.
    void tellHowFar() {
        if (progressWanted()) {
            tellProgress("pytstates: decompressing " + name_ + " into " + dir_ + ": " + sizeWords(outBytes_));
            return;
        }
        if (!progress_) return;
        if (!toldStart_) {
            if (std::chrono::steady_clock::now() - started_ < tellAfter_) return;
            toldStart_ = true;
            told_ = outBytes_ / kGiB;
            progress_("pytstates: " + startWords_ + " (" + sizeWords(outBytes_) + " so far)");
        } else if (outBytes_ / kGiB != told_) {
            told_ = outBytes_ / kGiB;
            progress_("pytstates: " + name_ + ": " + sizeWords(outBytes_) + " decompressed");
        }
    }
    // The line that ends what tellHowFar began.
    void tellEnd() const {
        if (!toldStart_) return;
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        char buf[64];
        std::snprintf(buf, sizeof buf, " in %.1f s", seconds);
        progress_("pytstates: " + name_ + ": " + sizeWords(outBytes_) + " decompressed" + buf);
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(name_ + ": " + what + " (after " + std::to_string(inBytes_) + " compressed bytes)");
    }
    uint64_t outBytes() const { return outBytes_; }

private:
    // Keeps the first bytes until the ELF header and its program and section header tables are in,
    // then sets end_ to the furthest byte they name. A stream that is not ELF is not decoded; one
    // that is not a 64-bit ELF core, or whose tables lie far in (PN_XNUM, a header table after
    // gigabytes), is decoded whole (up to the bound).
    void remember(const char* p, size_t len) {
        if (settled_) return;
        size_t want = std::min(len, static_cast<size_t>(kHeadLimit - std::min<uint64_t>(kHeadLimit, head_.size())));
        head_.insert(head_.end(), p, p + want);
        // Not ELF at all: nothing of it can be read as a core (the reader says so), none is decoded.
        if (head_.size() >= SELFMAG && std::memcmp(head_.data(), ELFMAG, SELFMAG) != 0) return settle(0);
        if (head_.size() < sizeof(Elf64_Ehdr)) return;
        Elf64_Ehdr eh;
        std::memcpy(&eh, head_.data(), sizeof eh);
        if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_CORE ||
            eh.e_phnum == PN_XNUM || eh.e_phentsize != sizeof(Elf64_Phdr))
            return settle(UINT64_MAX);
        uint64_t phEnd = eh.e_phoff + uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr);
        if (eh.e_phoff > kHeadLimit || phEnd > kHeadLimit) return settle(UINT64_MAX);
        if (head_.size() < phEnd) {
            if (head_.size() >= kHeadLimit) settle(UINT64_MAX);
            return;
        }
        uint64_t end = std::max<uint64_t>(sizeof eh, phEnd);
        if (eh.e_shnum) end = std::max<uint64_t>(end, eh.e_shoff + uint64_t(eh.e_shnum) * eh.e_shentsize);
        for (size_t i = 0; i < eh.e_phnum; ++i) {
            Elf64_Phdr ph;
            std::memcpy(&ph, head_.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
            if (ph.p_offset > UINT64_MAX - ph.p_filesz) return settle(UINT64_MAX);
            end = std::max<uint64_t>(end, ph.p_offset + ph.p_filesz);
        }
        // Before any of it is written: a core that claims more than may be decoded is refused
        // whatever its stream holds.
        if (end > bound_.bytes)
            throw std::runtime_error(name_ + ": the core needs " + sizeWords(end) + " decoded, " + bound_.words + ": set TMPDIR or --max-decoded");
        settle(end);
    }
    void settle(uint64_t end) {
        settled_ = true;
        end_ = end;
        head_.clear();
        head_.shrink_to_fit();
    }
    static constexpr uint64_t kHeadLimit = 16ull << 20;
    std::vector<char> head_;
    bool settled_ = false, beyond_ = false;
    uint64_t end_ = UINT64_MAX;

    int in_, out_;
    std::string name_, dir_;
    const ProgressLine& progress_;
    Bound bound_;
    std::string startWords_;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::chrono::milliseconds tellAfter_ = tellAfter();
    bool toldStart_ = false;
    uint64_t inBytes_ = 0, outBytes_ = 0, told_ = 0;
};

void zstd(Decompression& d) {
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!ctx) throw std::runtime_error("zstd: out of memory");
    // The decoder keeps its default limit, a 128 MiB window (systemd-coredump's zstd level needs
    // a few MiB): a frame asking for more (zstd --long, or a corrupt header) is refused, not given
    // gigabytes.
    std::vector<unsigned char> in(ZSTD_DStreamInSize()), out(ZSTD_DStreamOutSize());
    size_t last = 1;  // 0 once a frame is complete
    bool any = false;
    while (size_t n = d.complete() ? 0 : d.readInput(in)) {
        any = true;
        ZSTD_inBuffer input{in.data(), n, 0};
        while (input.pos < input.size && !d.complete()) {
            ZSTD_outBuffer output{out.data(), out.size(), 0};
            last = ZSTD_decompressStream(ctx.get(), &output, &input);
            if (ZSTD_isError(last)) {
                if (ZSTD_getErrorCode(last) == ZSTD_error_frameParameter_windowTooLarge)
                    d.fail("the zstd frame asks for a window over 128 MiB (written with zstd --long?): decompress it with "
                           "`zstd -d --long=31` first");
                d.fail(std::string("corrupt zstd data: ") + ZSTD_getErrorName(last));
            }
            d.write(out.data(), output.pos);
        }
    }
    // A frame whose input is all in may still hold output (the last call filled the buffer).
    while (any && last != 0 && !d.complete()) {
        ZSTD_inBuffer input{nullptr, 0, 0};
        ZSTD_outBuffer output{out.data(), out.size(), 0};
        last = ZSTD_decompressStream(ctx.get(), &output, &input);
        if (ZSTD_isError(last)) d.fail(std::string("corrupt zstd data: ") + ZSTD_getErrorName(last));
        d.write(out.data(), output.pos);
        if (output.pos == 0) break;
    }
    if (!d.complete() && (!any || last != 0)) d.fail("the zstd stream is truncated: it ends inside a frame");
}

void lz4(Decompression& d) {
    LZ4F_dctx* raw = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&raw, LZ4F_VERSION))) throw std::runtime_error("lz4: out of memory");
    std::unique_ptr<LZ4F_dctx, LZ4F_errorCode_t (*)(LZ4F_dctx*)> ctx(raw, LZ4F_freeDecompressionContext);
    std::vector<unsigned char> in(kChunk), out(4 * kChunk);
    size_t hint = 1;  // 0 once a frame is complete
    while (size_t n = d.complete() ? 0 : d.readInput(in)) {
        size_t pos = 0;
        while (pos < n && !d.complete()) {
            size_t outSize = out.size(), inSize = n - pos;
            hint = LZ4F_decompress(ctx.get(), out.data(), &outSize, in.data() + pos, &inSize, nullptr);
            if (LZ4F_isError(hint)) d.fail(std::string("corrupt lz4 data: ") + LZ4F_getErrorName(hint));
            d.write(out.data(), outSize);
            pos += inSize;
            if (inSize == 0 && outSize == 0) break;
        }
    }
    if (hint != 0 && !d.complete()) d.fail("the lz4 stream is truncated: it ends inside a frame");
}

// gzip, as `gzip core` and pystack's habit leave it: zlib's inflate with gzip headers only
// (windowBits 16 + 15), members read one after another as gunzip does.
void gzip(Decompression& d) {
    z_stream strm{};
    if (inflateInit2(&strm, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error("gzip: cannot start the decoder");
    std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&strm, inflateEnd);
    std::vector<unsigned char> in(kChunk), out(4 * kChunk);
    bool inMember = false;  // decoding a member that has not ended
    bool outputFull = false;  // the last call filled the output: it may hold more without new input
    for (;;) {
        if (strm.avail_in == 0 && !outputFull) {
            size_t n = d.readInput(in);
            if (n == 0) break;
            strm.next_in = in.data();
            strm.avail_in = static_cast<uInt>(n);
        }
        strm.next_out = out.data();
        strm.avail_out = static_cast<uInt>(out.size());
        int r = inflate(&strm, Z_NO_FLUSH);
        outputFull = strm.avail_out == 0;
        d.write(out.data(), out.size() - strm.avail_out);
        if (d.complete()) return;
        if (r == Z_STREAM_END) {
            inMember = false;
            if (inflateReset(&strm) != Z_OK) throw std::runtime_error("gzip: cannot restart the decoder");
            continue;
        }
        if (r == Z_MEM_ERROR) throw std::runtime_error("gzip: out of memory");
        if (r != Z_OK && r != Z_BUF_ERROR) d.fail(std::string("corrupt gzip data: ") + (strm.msg ? strm.msg : "inflate " + std::to_string(r)));
        inMember = true;
    }
    if (inMember) d.fail("the gzip stream is truncated: it ends inside a member");
}

void xz(Decompression& d) {
    lzma_stream strm = LZMA_STREAM_INIT;
    // xz -9 needs 65 MiB to decode; a header asking for more than 256 MiB is refused, not obeyed.
    constexpr uint64_t kMemoryLimit = 256ull << 20;
    if (lzma_stream_decoder(&strm, kMemoryLimit, LZMA_CONCATENATED) != LZMA_OK) throw std::runtime_error("xz: cannot start the decoder");
    std::unique_ptr<lzma_stream, void (*)(lzma_stream*)> guard(&strm, lzma_end);
    std::vector<unsigned char> in(kChunk), out(4 * kChunk);
    lzma_action action = LZMA_RUN;
    strm.next_out = out.data();
    strm.avail_out = out.size();
    for (;;) {
        if (strm.avail_in == 0 && action == LZMA_RUN) {
            strm.next_in = in.data();
            strm.avail_in = d.readInput(in);
            if (strm.avail_in == 0) action = LZMA_FINISH;
        }
        lzma_ret r = lzma_code(&strm, action);
        if (strm.avail_out == 0 || r == LZMA_STREAM_END) {
            d.write(out.data(), out.size() - strm.avail_out);
            strm.next_out = out.data();
            strm.avail_out = out.size();
        }
        if (r == LZMA_STREAM_END || d.complete()) return;
        if (r == LZMA_OK) continue;
        if (r == LZMA_BUF_ERROR) d.fail("the xz stream is truncated");
        if (r == LZMA_MEM_ERROR) throw std::runtime_error("xz: out of memory");
        if (r == LZMA_MEMLIMIT_ERROR) d.fail("the xz stream asks for more than 256 MiB of memory to decode (corrupt, or xz --lzma2=dict= beyond -9)");
        d.fail(r == LZMA_FORMAT_ERROR ? "not an xz stream" : "corrupt xz data (" + std::to_string(static_cast<int>(r)) + ")");
    }
}

}  // namespace

const char* compressionName(CoreCompression kind) {
    switch (kind) {
        case CoreCompression::Zstd: return "zstd";
        case CoreCompression::Lz4: return "lz4";
        case CoreCompression::Xz: return "xz";
        case CoreCompression::Gzip: return "gzip";
        case CoreCompression::None: break;
    }
    return "none";
}

CoreCompression detectCompression(const unsigned char* head, size_t size) {
    static const unsigned char zstdMagic[] = {0x28, 0xb5, 0x2f, 0xfd};
    static const unsigned char lz4Magic[] = {0x04, 0x22, 0x4d, 0x18};
    static const unsigned char xzMagic[] = {0xfd, '7', 'z', 'X', 'Z', 0x00};
    static const unsigned char gzipMagic[] = {0x1f, 0x8b, 0x08};  // deflate, the only method gzip writes
    if (size >= sizeof zstdMagic && std::memcmp(head, zstdMagic, sizeof zstdMagic) == 0) return CoreCompression::Zstd;
    if (size >= sizeof lz4Magic && std::memcmp(head, lz4Magic, sizeof lz4Magic) == 0) return CoreCompression::Lz4;
    if (size >= sizeof xzMagic && std::memcmp(head, xzMagic, sizeof xzMagic) == 0) return CoreCompression::Xz;
    if (size >= sizeof gzipMagic && std::memcmp(head, gzipMagic, sizeof gzipMagic) == 0) return CoreCompression::Gzip;
    return CoreCompression::None;
}

DecompressedCore decompressToTemporaryFile(int in, CoreCompression kind, const std::string& name, const ProgressLine& progress,
                                           uint64_t maxDecoded) {
    struct stat st {};
    fstat(in, &st);
    std::string dir = temporaryDirectory();
    const char* tmpdir = std::getenv("TMPDIR");
    std::string where = tmpdir && *tmpdir ? "$TMPDIR (" + dir + ")" : dir;
    // The bound: what the user set, else the room the file may take (its zero pages take none, so
    // a core mostly of zeros may need --max-decoded to be read where it would fit).
    Bound bound;
    struct statvfs fs {};
    bool room = statvfs(dir.c_str(), &fs) == 0;
    uint64_t freeBytes = room ? static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize : 0;
    if (maxDecoded) {
        bound.bytes = maxDecoded;
        bound.words = "more than --max-decoded (" + sizeWords(maxDecoded) + ")";
        bound.over = "--max-decoded (" + sizeWords(maxDecoded) + ")";
    } else if (room) {
        bound.bytes = freeBytes;
        bound.words = where + " has " + sizeWords(freeBytes) + " free";
        bound.over = "the " + sizeWords(freeBytes) + " free in " + where;
    }
    int out = openTemporary(dir);
    std::string startWords = name + " is " + compressionName(kind) + "-compressed (" + sizeWords(static_cast<uint64_t>(st.st_size)) +
                             "): decompressing it into an unlinked temporary file in " + dir +
                             (room ? ", " + sizeWords(freeBytes) + " free there" : "");
    DecompressedCore result;
    result.fd = out;
    try {
        Decompression d(in, out, name, dir, progress, bound, startWords);
        if (kind == CoreCompression::Zstd) zstd(d);
        else if (kind == CoreCompression::Lz4) lz4(d);
        else if (kind == CoreCompression::Gzip) gzip(d);
        else xz(d);
        d.finish();
        if (d.ignoredMore(static_cast<uint64_t>(st.st_size))) result.ignoredFrom = d.outBytes();
        d.tellEnd();
    } catch (...) {
        ::close(out);
        throw;
    }
    return result;
}

}  // namespace pytstates
