// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/process_state.h"

#include <dirent.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "symbols/live/process_files.h"

namespace pytstates {

namespace {

constexpr unsigned long kPfExiting = 0x4;  // PF_EXITING in the flags of /proc/PID/stat
constexpr int kSettleLooks = 20;           // 10 ms apart: how long an execve may take to settle

struct TaskStat {
    bool read = false;
    char state = '?';
    unsigned long flags = 0;
    unsigned long long startTime = 0;
};

TaskStat taskStat(const std::string& path) {
    TaskStat out;
    auto fields = procStatFields(path);  // proc(5): state is field 3, flags 9, starttime 22
    if (fields.size() <= 22 - 3) return out;
    out.state = fields[0].empty() ? '?' : fields[0][0];
    out.flags = std::strtoul(fields[9 - 3].c_str(), nullptr, 10);
    out.startTime = std::strtoull(fields[22 - 3].c_str(), nullptr, 10);
    out.read = true;
    return out;
}

bool ending(const TaskStat& t) {
    return !t.read || t.state == 'Z' || t.state == 'X' || t.state == 'x' || (t.flags & kPfExiting);
}

}  // namespace

ProcessIdentity processIdentity(int pid) {
    std::string dir = "/proc/" + std::to_string(pid);
    ProcessIdentity id;
    id.startTime = taskStat(dir + "/stat").startTime;
    id.auxv = readProcText(dir + "/auxv");
    return id;
}

static ProcessLife lookAtProcess(int pid, const ProcessIdentity& before) {
    std::string dir = "/proc/" + std::to_string(pid);
    for (int look = 0;; ++look) {
        TaskStat leader = taskStat(dir + "/stat");
        if (!leader.read) return ProcessLife::Gone;
        if (before.startTime && leader.startTime != before.startTime) return ProcessLife::Gone;  // the pid was reused
        if (!ending(leader)) break;
        // A leader that ended alone keeps the process while another thread runs: a thread that
        // execs, which takes the leader's place in a moment (its files read empty until then), or
        // a leader that called pthread_exit.
        bool othersRun = false;
        if (DIR* d = opendir((dir + "/task").c_str())) {
            while (dirent* e = readdir(d))
                if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && !ending(taskStat(dir + "/task/" + e->d_name + "/stat"))) {
                    othersRun = true;
                    break;
                }
            closedir(d);
        }
        if (!othersRun) return ProcessLife::Exiting;
        if (look == kSettleLooks) return ProcessLife::Running;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // The leader's auxv is the process's.
    std::string auxv = readProcText(dir + "/auxv");
    if (!before.auxv.empty() && !auxv.empty() && auxv != before.auxv) return ProcessLife::Replaced;
    return ProcessLife::Running;
}

ProcessLife processLife(int pid, const ProcessIdentity& before) {
    // An end is told only when a second look, 10 ms on, sees it too: a process that ended stays
    // ended, and one look at /proc may catch a moment no end explains (live.chaos once said a
    // process taking a stream of signals had exited, on a loaded machine).
    ProcessLife life = lookAtProcess(pid, before);
    if (life != ProcessLife::Gone && life != ProcessLife::Exiting) return life;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return lookAtProcess(pid, before);
}

bool threadEnding(int pid, int tid) {
    return ending(taskStat("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat"));
}

std::string endedDuringAttach(int pid, ProcessLife life) {
    std::string p = " (pid " + std::to_string(pid) + ")";
    if (life == ProcessLife::Replaced) return "the process ran another program (execve) during the attach" + p;
    return "the process exited during the attach" + p;
}

}  // namespace pytstates
