// SPDX-License-Identifier: Apache-2.0
#include "symbols/core/signal_names.h"

#include <signal.h>

namespace pytstates {

bool signalDumpsCore(int sig) {
    switch (sig) {
        case SIGQUIT: case SIGILL: case SIGTRAP: case SIGABRT: case SIGBUS: case SIGFPE:
        case SIGSEGV: case SIGXCPU: case SIGXFSZ: case SIGSYS:
            return true;
        default:
            return false;
    }
}

std::string signalName(int sig) {
    static const char* const names[] = {nullptr,   "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",    "SIGTRAP", "SIGABRT",
                                        "SIGBUS",  "SIGFPE",  "SIGKILL",   "SIGUSR1", "SIGSEGV",   "SIGUSR2", "SIGPIPE",
                                        "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",
                                        "SIGTTIN", "SIGTTOU", "SIGURG",    "SIGXCPU", "SIGXFSZ",   "SIGVTALRM", "SIGPROF",
                                        "SIGWINCH", "SIGIO",  "SIGPWR",    "SIGSYS"};
    if (sig > 0 && sig < static_cast<int>(sizeof names / sizeof names[0])) return names[sig];
    if (sig >= 34 && sig <= 64) return "SIGRTMIN+" + std::to_string(sig - 34);
    return "signal " + std::to_string(sig);
}

namespace {

struct Code {
    int signal, code;
    const char *name, *words;
};

const Code kCodes[] = {
    {SIGSEGV, 1, "SEGV_MAPERR", "address not mapped"},
    {SIGSEGV, 2, "SEGV_ACCERR", "no permission for the access"},
    {SIGSEGV, 3, "SEGV_BNDERR", "bounds check failed"},
    {SIGSEGV, 4, "SEGV_PKUERR", "protection key check failed"},
    {SIGBUS, 1, "BUS_ADRALN", "misaligned address"},
    {SIGBUS, 2, "BUS_ADRERR", "address beyond the end of a mapped file"},
    {SIGBUS, 3, "BUS_OBJERR", "hardware error"},
    {SIGILL, 1, "ILL_ILLOPC", "illegal opcode"},
    {SIGILL, 2, "ILL_ILLOPN", "illegal operand"},
    {SIGILL, 3, "ILL_ILLADR", "illegal addressing mode"},
    {SIGILL, 4, "ILL_ILLTRP", "illegal trap"},
    {SIGILL, 5, "ILL_PRVOPC", "privileged opcode"},
    {SIGFPE, 1, "FPE_INTDIV", "integer divide by zero"},
    {SIGFPE, 2, "FPE_INTOVF", "integer overflow"},
    {SIGFPE, 3, "FPE_FLTDIV", "floating-point divide by zero"},
    {SIGTRAP, 1, "TRAP_BRKPT", "breakpoint"},
    {SIGTRAP, 2, "TRAP_TRACE", "trace trap"},
};

}  // namespace

std::string signalCodeName(int sig, int code) {
    switch (code) {
        case 0: return "SI_USER";
        case 0x80: return "SI_KERNEL";
        case -1: return "SI_QUEUE";
        case -2: return "SI_TIMER";
        case -6: return "SI_TKILL";
        default: break;
    }
    for (const auto& c : kCodes)
        if (c.signal == sig && c.code == code) return c.name;
    return {};
}

std::string signalCodeWords(int sig, int code) {
    switch (code) {
        case 0: return "sent with kill()";
        case 0x80: return sig == SIGSEGV ? "a general protection fault: the address is not reported" : "sent by the kernel";
        case -1: return "sent with sigqueue()";
        case -6: return "sent with tkill()/tgkill(): abort() and raise() send it so";
        default: break;
    }
    for (const auto& c : kCodes)
        if (c.signal == sig && c.code == code) return c.words;
    return {};
}

}  // namespace pytstates
