// SPDX-License-Identifier: Apache-2.0
// Opening a file pytstates was told of (--core, --exe, --history, and every path a core or a
// process names: its link map and NT_FILE mappings, debug links) without the side effects of
// opening what is not a file: the path is stat'ed first, so a FIFO (open blocks, or wakes its
// writer), a terminal (it could become the controlling terminal), another character device (its
// driver's open runs) or a directory is never opened. The open is O_NOCTTY | O_NONBLOCK and the
// descriptor is checked again: it must be the file that was stat'ed (the path may have been
// replaced in between).
#pragma once

#include <sys/types.h>

#include <string>

namespace pytstates {

// A read-only descriptor (O_CLOEXEC) of the regular file at `path` (or block device, when
// `blockDevice`); -1 with *error, one line naming the path: "PATH: No such file or directory",
// "PATH: not a regular file (a FIFO)".
int openRegularFile(const std::string& path, std::string* error, bool blockDevice = false);

// "a directory", "a FIFO", "a socket", "a device": what a st_mode that is no regular file is.
const char* fileKindWords(mode_t mode);

}  // namespace pytstates
