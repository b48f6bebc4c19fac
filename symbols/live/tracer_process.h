// SPDX-License-Identifier: Apache-2.0
// A child process sharing pytstates' memory (clone with CLONE_VM) that does the ptrace work of a
// stop: the threads it seizes are detached by the kernel when it exits, all in one pass (1,000
// PTRACE_DETACH calls, each waking its thread, took ~9 ms of the stop), and also when pytstates
// itself dies, even by SIGKILL (PR_SET_PDEATHSIG). A thread stopped on a signal gets that signal
// back when its tracer exits, as with PTRACE_DETACH and the signal, if the tracer left its stop
// unreported (waitid with WNOWAIT): reporting a stop clears the signal.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace pytstates {

class TracerProcess {
public:
    TracerProcess() = default;
    ~TracerProcess() { end(); }
    TracerProcess(const TracerProcess&) = delete;
    TracerProcess& operator=(const TracerProcess&) = delete;

    // Runs work() in the child, which stays the tracer afterwards. Returns false, error set, when
    // no child could be made or work() threw (the child is ended then). pytstates runs nothing
    // else meanwhile: the child uses its heap and its thread's TLS.
    bool run(const std::function<void()>& work, std::string* error);
    // Ends the child (SIGKILL) and waits for it: every thread it traced runs again.
    void end();
    pid_t pid() const { return pid_; }
    // The last run() gave up waiting for work() (which then has hung: running it elsewhere would too).
    bool timedOut() const { return timedOut_; }
    // From a signal handler: ends the running tracer, if any (async-signal-safe); false: none.
    static bool endFromSignalHandler();

private:
    static int main(void* self);
    pid_t pid_ = 0;
    pid_t parent_ = 0;
    int done_[2] = {-1, -1};  // the child writes one byte when work() returned
    int childEnd_ = -1;       // done_[1] as the child knows it (the parent closes its own copy)
    const std::function<void()>* work_ = nullptr;
    std::string error_;
    bool failed_ = false;
    bool timedOut_ = false;
    void* stack_ = nullptr;
};

}  // namespace pytstates
