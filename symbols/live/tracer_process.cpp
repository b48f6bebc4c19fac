// SPDX-License-Identifier: Apache-2.0
#include "symbols/live/tracer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <exception>
#include <string>

namespace pytstates {

namespace {
constexpr size_t kStackBytes = 1 << 20;
constexpr int kRunTimeoutMs = 30 * 1000;
volatile sig_atomic_t gTracer = 0;  // the running tracer, for endFromSignalHandler
}  // namespace

bool TracerProcess::endFromSignalHandler() {
    pid_t pid = gTracer;
    if (pid <= 0) return false;
    kill(pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
    }
    return true;
}

int TracerProcess::main(void* arg) {
    auto* self = static_cast<TracerProcess*>(arg);
    // Dies with pytstates (its tracees then run), and by default on the signals that end it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
    if (getppid() != self->parent_) _exit(1);  // pytstates died before PR_SET_PDEATHSIG took
    try {
        (*self->work_)();
    } catch (const std::exception& e) {
        self->error_ = e.what();
        self->failed_ = true;
    } catch (...) {
        self->error_ = "internal error";
        self->failed_ = true;
    }
    char byte = 1;
    ssize_t ignored = write(self->childEnd_, &byte, 1);
    (void)ignored;
    for (;;) pause();  // until end()'s SIGKILL
}

bool TracerProcess::run(const std::function<void()>& work, std::string* error) {
    end();
    if (pipe2(done_, O_CLOEXEC) != 0) {
        *error = "cannot make a pipe for the tracer process";
        return false;
    }
    stack_ = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack_ == MAP_FAILED) {
        stack_ = nullptr;
        end();
        *error = "cannot map the tracer process's stack";
        return false;
    }
    work_ = &work;
    timedOut_ = false;
    error_.clear();
    failed_ = false;
    parent_ = getpid();
    childEnd_ = done_[1];
    pid_ = clone(&TracerProcess::main, static_cast<char*>(stack_) + kStackBytes, CLONE_VM | SIGCHLD, this);
    if (pid_ <= 0) {
        pid_ = 0;
        end();
        *error = "cannot start the tracer process";
        return false;
    }
    gTracer = pid_;
    close(done_[1]);
    done_[1] = -1;
    // work() bounds each of its waits; this bounds the whole, should one wait in the kernel all
    // the same: the child is ended (its tracees run again) rather than pytstates waiting on.
    pollfd done{done_[0], POLLIN, 0};
    int ready;
    do {
        ready = poll(&done, 1, kRunTimeoutMs);
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
        *error = "the tracer process did not finish the stop in " + std::to_string(kRunTimeoutMs / 1000) + " s";
        timedOut_ = true;
        end();
        return false;
    }
    char byte = 0;
    ssize_t n;
    do {
        n = read(done_[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) {  // it died before work() returned (a signal): its tracees run again
        *error = "the tracer process ended early";
        end();
        return false;
    }
    if (failed_) {
        *error = error_;
        end();
        return false;
    }
    return true;
}

void TracerProcess::end() {
    if (pid_ > 0) {
        gTracer = 0;
        kill(pid_, SIGKILL);
        int status;
        while (waitpid(pid_, &status, __WALL) < 0 && errno == EINTR) {
        }
        pid_ = 0;
    }
    for (int& fd : done_)
        if (fd >= 0) {
            close(fd);
            fd = -1;
        }
    if (stack_) {
        munmap(stack_, kStackBytes);
        stack_ = nullptr;
    }
}

}  // namespace pytstates
