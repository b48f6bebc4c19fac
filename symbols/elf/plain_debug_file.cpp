// SPDX-License-Identifier: Apache-2.0
#include "symbols/elf/plain_debug_file.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "symbols/elf/zlib_stream.h"
#include "symbols/regular_file.h"
#include "symbols/unlinked_file.h"

namespace pytstates {

namespace {

constexpr size_t kChunk = 1 << 18;            // read and write in pieces: nothing is held whole
constexpr uint64_t kMaxSection = 1ull << 32;  // larger than any debug section this reads

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }
    int release() {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }

private:
    int fd_;
};

// pread or pwrite repeated until all `len` bytes at `offset` are moved (0 or -1: false).
template <typename Call>
bool allBytes(Call call, size_t len, uint64_t offset) {
    for (size_t done = 0; done < len;) {
        ssize_t n = call(done, static_cast<off_t>(offset + done));
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

bool readAll(int fd, void* buf, size_t len, uint64_t offset) {
    return allBytes([&](size_t done, off_t at) { return ::pread(fd, static_cast<char*>(buf) + done, len - done, at); }, len, offset);
}

bool writeAll(int fd, const void* buf, size_t len, uint64_t offset) {
    return allBytes([&](size_t done, off_t at) { return ::pwrite(fd, static_cast<const char*>(buf) + done, len - done, at); }, len, offset);
}

// The bytes [from, to) of `in` at the same offsets of `out`.
bool copyRange(int in, int out, uint64_t from, uint64_t to, std::vector<char>& buf) {
    while (from < to) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), to - from));
        if (!readAll(in, buf.data(), n, from) || !writeAll(out, buf.data(), n, from)) return false;
        from += n;
    }
    return true;
}

// Inflates the zlib stream stored at [offset, offset + size) of `in` into exactly `plain` bytes at
// `at` of `out`.
bool inflateRange(int in, uint64_t offset, uint64_t size, int out, uint64_t at, uint64_t plain, std::vector<char>& outBuf) {
    ZlibStream z;
    if (!z.start([in](uint64_t from, void* buf, size_t len) { return readAll(in, buf, len, from); }, offset, size, plain)) return false;
    while (size_t got = z.inflateSome(reinterpret_cast<unsigned char*>(outBuf.data()), outBuf.size()))
        if (!writeAll(out, outBuf.data(), got, at + z.done() - got)) return false;
    return z.complete();
}

uint64_t alignUp(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

// An unlinked file where large temporary files go: $TMPDIR, else /var/tmp (on disk where /tmp
// may be memory), else /tmp.
int temporaryFile() {
    std::vector<std::string> dirs;
    if (const char* t = std::getenv("TMPDIR"); t && *t) dirs.push_back(t);
    dirs.push_back("/var/tmp");
    dirs.push_back("/tmp");
    for (const auto& d : dirs)
        if (int fd = openUnlinkedFile(d, "pytstates-debug-"); fd >= 0) return fd;
    return -1;
}

}  // namespace

int openDecompressedCopy(const std::string& path) {
    Fd in(openRegularFile(path, nullptr));
    struct stat st {};
    if (in.get() < 0 || ::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    uint64_t fileSize = static_cast<uint64_t>(st.st_size);
    Elf64_Ehdr eh;
    if (fileSize < sizeof eh || !readAll(in.get(), &eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64)
        return -1;
    const unsigned char hostData = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
    // e_shnum 0 with sections: the count is in section 0 (more than 65279 sections): not read here.
    // ET_REL: libdwfl relocates such a file's DWARF in place, writing to the mapping that
    // DebugSession::releaseDecompressedPages would drop.
    if (eh.e_ident[EI_DATA] != hostData || eh.e_type == ET_REL || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum >= SHN_LORESERVE ||
        eh.e_shoff > fileSize || uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > fileSize - eh.e_shoff)
        return -1;
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    if (!readAll(in.get(), sh.data(), sh.size() * sizeof(Elf64_Shdr), eh.e_shoff)) return -1;

    struct Packed {
        size_t index;
        uint64_t offset, size, plain, align;  // the stream after its Elf64_Chdr; its decompressed size
    };
    std::vector<Packed> packed;
    for (size_t i = 1; i < sh.size(); ++i) {
        const Elf64_Shdr& s = sh[i];
        if (!(s.sh_flags & SHF_COMPRESSED) || s.sh_type == SHT_NOBITS) continue;
        Elf64_Chdr ch;
        if (s.sh_size < sizeof ch || s.sh_offset > fileSize || s.sh_size > fileSize - s.sh_offset ||
            !readAll(in.get(), &ch, sizeof ch, s.sh_offset))
            return -1;
        if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size > kMaxSection) continue;  // left as it is (libdw tells)
        packed.push_back({i, s.sh_offset + sizeof ch, s.sh_size - sizeof ch, ch.ch_size, ch.ch_addralign});
    }
    if (packed.empty()) return -1;

    Fd out(temporaryFile());
    if (out.get() < 0) return -1;
    std::vector<char> copyBuf(kChunk), outBuf(4 * kChunk);
    // The original's bytes but the compressed streams (a hole is left where they were, never read).
    std::vector<std::pair<uint64_t, uint64_t>> skip;
    skip.reserve(packed.size());
    for (const auto& p : packed) skip.emplace_back(p.offset, p.offset + p.size);
    std::sort(skip.begin(), skip.end());
    uint64_t at = 0;
    for (const auto& [from, to] : skip) {
        if (from > at && !copyRange(in.get(), out.get(), at, from, copyBuf)) return -1;
        at = std::max(at, to);
    }
    if (at < fileSize && !copyRange(in.get(), out.get(), at, fileSize, copyBuf)) return -1;
    // Each section decompressed after the original's end, then the section headers that say so.
    uint64_t end = alignUp(fileSize, 4096);
    for (const auto& p : packed) {
        end = alignUp(end, std::max<uint64_t>(p.align, 64));
        if (!inflateRange(in.get(), p.offset, p.size, out.get(), end, p.plain, outBuf)) return -1;
        Elf64_Shdr& s = sh[p.index];
        s.sh_flags &= ~static_cast<uint64_t>(SHF_COMPRESSED);
        s.sh_offset = end;
        s.sh_size = p.plain;
        s.sh_addralign = p.align;
        end += p.plain;
    }
    eh.e_shoff = alignUp(end, 8);
    if (!writeAll(out.get(), sh.data(), sh.size() * sizeof(Elf64_Shdr), eh.e_shoff) || !writeAll(out.get(), &eh, sizeof eh, 0))
        return -1;
    return out.release();
}

}  // namespace pytstates
