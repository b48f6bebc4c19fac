// SPDX-License-Identifier: Apache-2.0
#include "symbols/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pytstates {

const char* fileKindWords(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "a device";
}

int openRegularFile(const std::string& path, std::string* error, bool blockDevice) {
    auto accepted = [blockDevice](const struct stat& st) { return S_ISREG(st.st_mode) || (blockDevice && S_ISBLK(st.st_mode)); };
    struct stat before {};
    if (::stat(path.c_str(), &before) != 0) {
        if (error) *error = path + ": " + std::strerror(errno);
        return -1;
    }
    if (!accepted(before)) {
        if (error) *error = path + ": not a regular file (" + fileKindWords(before.st_mode) + ")";
        return -1;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (error) *error = path + ": " + std::strerror(errno);
        return -1;
    }
    struct stat after {};
    if (::fstat(fd, &after) != 0 || !accepted(after) || after.st_dev != before.st_dev || after.st_ino != before.st_ino) {
        int saved = errno;
        ::close(fd);
        if (error) *error = path + ": " + (accepted(after) ? "replaced while it was opened" : std::string("not a regular file (") + fileKindWords(after.st_mode) + ")");
        errno = saved ? saved : ESTALE;
        return -1;
    }
    return fd;
}

}  // namespace pytstates
