// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/process_files.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "symbols/text/proc_maps.h"

namespace pytstates {

namespace {

// /proc/PID/maps and /proc/PID/exe append " (deleted)" to a file unlinked (or replaced) since it
// was mapped: the path is the one before it, and the file is still there through map_files.
bool stripDeleted(std::string& path) {
    static const std::string kDeleted = " (deleted)";
    if (path.size() <= kDeleted.size() || path.compare(path.size() - kDeleted.size(), kDeleted.size(), kDeleted) != 0) return false;
    path.resize(path.size() - kDeleted.size());
    return true;
}

std::string readLink(const std::string& path) {
    char buf[4096];
    ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::vector<int> nspid(const std::string& status) {
    std::vector<int> ids;
    std::istringstream in(status);
    for (std::string line; std::getline(in, line);)
        if (line.rfind("NSpid:", 0) == 0) {
            std::istringstream fields(line.substr(6));
            for (int id; fields >> id;) ids.push_back(id);
        }
    return ids;
}

}  // namespace

std::string readProcText(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string> procStatFields(const std::string& path) {
    std::string stat = readProcText(path);
    size_t close = stat.rfind(')');
    std::vector<std::string> out;
    if (close == std::string::npos) return out;
    std::istringstream rest(stat.substr(close + 1));
    for (std::string field; rest >> field;) out.push_back(field);
    return out;
}

size_t processThreadCount(int pid) {
    auto fields = procStatFields("/proc/" + std::to_string(pid) + "/stat");
    return fields.size() > 20 - 3 ? static_cast<size_t>(std::strtoull(fields[20 - 3].c_str(), nullptr, 10)) : 0;  // num_threads
}

ProcessFiles readProcessFiles(int pid) {
    ProcessFiles out;
    out.dir = "/proc/" + std::to_string(pid);
    // A process chrooted or in its own mount namespace: the kernel names its files as we see
    // them (under its root, e.g. /var/lib/container/rootfs/usr/lib/...); the process and its
    // link map name them from its root (/usr/lib/...). Mappings are named as the process does.
    std::string root = readLink(out.dir + "/root");
    if (!root.empty()) out.root = root;
    auto ownPath = [&](std::string& path) {
        if (out.root != "/" && path.size() > out.root.size() && path.compare(0, out.root.size(), out.root) == 0 &&
            path[out.root.size()] == '/')
            path.erase(0, out.root.size());
    };
    for (auto& m : parseMaps(readProcText(out.dir + "/maps"))) {
        if (m.path.empty() || m.path[0] != '/' || m.inode == 0) continue;
        bool deleted = stripDeleted(m.path);
        ownPath(m.path);
        out.mappings.push_back({m.start, m.end, m.offset, m.path, deleted});
    }
    out.executable = readLink(out.dir + "/exe");
    stripDeleted(out.executable);
    ownPath(out.executable);
    out.namespacePids = nspid(readProcText(out.dir + "/status"));
    return out;
}

int namespaceTid(int pid, int tid) {
    auto ids = nspid(readProcText("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status"));
    return ids.size() > 1 ? ids.back() : 0;
}

std::optional<std::string> readThreadComm(int pid, int tid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm", std::ios::binary);
    if (!in) return std::nullopt;
    std::string comm((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.eof() && in.fail()) return std::nullopt;
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    return comm;
}

}  // namespace pytstates
