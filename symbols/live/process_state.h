// SPDX-License-Identifier: Apache-2.0
// Whether a process still runs the program pytstates began to read: running, exiting (killed, or
// exited and not yet reaped), gone, or running another program (execve, or its pid reused). An
// attach that fails says which, rather than the error the dying process happened to cause (a
// permission refused to a zombie thread, a runtime not found in memory that went away).
#pragma once

#include <string>

namespace pytstates {

// What identifies one program run of a process: its start time (a reused pid has another) and its
// auxiliary vector (an execve makes a new one, at new addresses under ASLR).
struct ProcessIdentity {
    unsigned long long startTime = 0;  // field 22 of /proc/PID/stat; 0 when unreadable
    std::string auxv;
};
ProcessIdentity processIdentity(int pid);

enum class ProcessLife { Running, Exiting, Gone, Replaced };
// Exiting: every thread is a zombie or exiting. A leader that ended while other threads run is
// looked at again for up to 0.2 s (another thread's execve is taking its place), then Running
// (it called pthread_exit). Gone: no such process any more, or its pid is another's. Replaced:
// the same process runs another program than `before` identified (after an execve).
ProcessLife processLife(int pid, const ProcessIdentity& before);

// The thread is a zombie, dead, exiting or gone: the kernel refuses to seize such a thread with
// EPERM, which is then no permission problem.
bool threadEnding(int pid, int tid);

// One line for a process that ended (or was replaced) while pytstates read it.
std::string endedDuringAttach(int pid, ProcessLife life);

}  // namespace pytstates
