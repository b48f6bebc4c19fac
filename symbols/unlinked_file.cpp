// SPDX-License-Identifier: Apache-2.0
#include "symbols/unlinked_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace pytstates {

int openUnlinkedFile(const std::string& dir, const std::string& namePrefix) {
    int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    std::string pattern = dir + "/" + namePrefix + "XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    fd = mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.data());
    return fd;
}

}  // namespace pytstates
