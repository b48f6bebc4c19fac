// SPDX-License-Identifier: Apache-2.0
// What /proc says of a local process's files, named as the process itself names them: its file
// mappings (a file deleted or replaced since it was mapped is marked, and stays readable through
// /proc/PID/map_files), its executable, its root directory and its pid in each PID namespace.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "symbols/modules/module_discovery.h"

namespace pytstates {

struct ProcessFiles {
    std::string dir;                  // "/proc/PID"
    std::string root = "/";           // its root directory as we see it (a chroot, a container's rootfs)
    std::vector<MappedFile> mappings;
    std::string executable;
    std::vector<int> namespacePids;   // NSpid: ours first, its own namespace's last
};

ProcessFiles readProcessFiles(int pid);

// The last NSpid field of /proc/PID/task/TID/status: the thread's id in the process's own PID
// namespace; 0 when unknown.
int namespaceTid(int pid, int tid);

std::string readProcText(const std::string& path);

// The kernel's name of a thread, /proc/PID/task/TID/comm without its newline; nullopt when unreadable.
std::optional<std::string> readThreadComm(int pid, int tid);

// The fields of a /proc/.../stat file from the third (state) on, split at spaces: COMM, the
// second, may hold spaces and parentheses, so they are read after its last ')'. Empty when the
// file cannot be read. Field N of proc(5) is element N - 3.
std::vector<std::string> procStatFields(const std::string& path);

// How many threads the kernel counts in the process (num_threads of /proc/PID/stat); 0 if unknown.
size_t processThreadCount(int pid);

}  // namespace pytstates
