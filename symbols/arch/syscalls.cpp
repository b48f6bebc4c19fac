// SPDX-License-Identifier: Apache-2.0
#include "symbols/arch/syscalls.h"

namespace pytstates {

namespace {

struct Call {
    const char* name;
    int x86_64;   // arch/x86/entry/syscalls/syscall_64.tbl
    int aarch64;  // include/uapi/asm-generic/unistd.h; -1: not on this machine
};

// The kernel's numbers are its ABI: they never change.
const Call kCalls[] = {
    {"read", 0, 63},          {"write", 1, 64},          {"openat", 257, 56},         {"close", 3, 57},
    {"poll", 7, -1},          {"ppoll", 271, 73},        {"ioctl", 16, 29},           {"pread64", 17, 67},
    {"pwrite64", 18, 68},     {"readv", 19, 65},         {"writev", 20, 66},          {"select", 23, -1},
    {"pselect6", 270, 72},    {"pause", 34, -1},         {"nanosleep", 35, 101},      {"clock_nanosleep", 230, 115},
    {"accept", 43, 202},      {"accept4", 288, 242},     {"connect", 42, 203},        {"sendto", 44, 206},
    {"recvfrom", 45, 207},    {"sendmsg", 46, 211},      {"recvmsg", 47, 212},        {"recvmmsg", 299, 243},
    {"wait4", 61, 260},       {"waitid", 247, 95},       {"semop", 65, 193},          {"semtimedop", 220, 192},
    {"msgsnd", 69, 189},      {"msgrcv", 70, 188},       {"fcntl", 72, 25},           {"flock", 73, 32},
    {"fsync", 74, 82},        {"fdatasync", 75, 83},     {"futex", 202, 98},          {"futex_waitv", 449, 449},
    {"epoll_wait", 232, -1},  {"epoll_pwait", 281, 22},  {"epoll_pwait2", 441, 441},  {"splice", 275, 76},
    {"rt_sigsuspend", 130, 133}, {"rt_sigtimedwait", 128, 137}, {"io_getevents", 208, 4}, {"mq_timedreceive", 243, 183},
    {"getrandom", 318, 278},  {"sched_yield", 24, 124},
};

}  // namespace

std::string syscallName(Machine machine, int64_t number) {
    if (number < 0) return {};
    for (const Call& c : kCalls)
        if ((machine == Machine::X86_64 ? c.x86_64 : c.aarch64) == number) return c.name;
    return {};
}

}  // namespace pytstates
