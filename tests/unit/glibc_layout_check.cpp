// SPDX-License-Identifier: Apache-2.0
// Holds the glibc lock layout table (symbols/glibc/lock_layout.h) and the wait-function names
// (symbols/native/wait_functions.cpp) against a real libc's DWARF and symbol table: the table is
// what the tool reads without libc6-dbg, so it must agree with every glibc release it claims.
//
// Usage: glibc_layout_check [--syscall-cancel] LIBC_DEBUG_FILE
//   --syscall-cancel: the release waits in __syscall_cancel_arch (glibc 2.41 and later); its
//   names must be there and be read as a system call's sleep.
// Exit status 0 when all agree, 1 when one disagrees (each said on one line), 2 on bad input.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "symbols/elf/dwarf_types.h"
#include "symbols/elf/elf_file.h"
#include "symbols/glibc/lock_layout.h"
#include "symbols/native/wait_functions.h"

using namespace pytstates;

namespace {

struct Expected {
    const char* symbol;  // as libc's .symtab names it, as an unwinder shows it on a stack
    WaitKind kind;
};

// The entry points a blocked thread's innermost frames show, in 2.36 and later.
const std::vector<Expected> kCommon = {
    {"___pthread_mutex_lock", WaitKind::Mutex},   {"__pthread_mutex_lock_full", WaitKind::Mutex},
    {"__GI___lll_lock_wait", WaitKind::Mutex},    {"__lll_lock_wait", WaitKind::Mutex},
    {"___pthread_rwlock_wrlock", WaitKind::Rwlock}, {"___pthread_rwlock_rdlock", WaitKind::Rwlock},
    {"___pthread_join", WaitKind::Join},          {"__pthread_clockjoin_ex", WaitKind::Join},
    {"___pthread_cond_wait", WaitKind::Condition}, {"__GI___libc_read", WaitKind::Syscall},
    {"__poll", WaitKind::Syscall},                {"__clock_nanosleep", WaitKind::Syscall},
};
const std::vector<Expected> kSyscallCancel = {
    {"__syscall_cancel_arch", WaitKind::Futex},
    {"__internal_syscall_cancel", WaitKind::Futex},
};

}  // namespace

int main(int argc, char** argv) {
    bool cancel = false;
    std::string path;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--syscall-cancel") == 0) cancel = true;
        else path = argv[i];
    }
    if (path.empty()) {
        std::fprintf(stderr, "usage: glibc_layout_check [--syscall-cancel] LIBC_DEBUG_FILE\n");
        return 2;
    }
    std::string error;
    auto elf = ElfFile::open(path, &error);
    if (!elf || !elf->hasDebugInfo()) {
        std::fprintf(stderr, "glibc_layout_check: %s: %s\n", path.c_str(), elf ? "no .debug_info" : error.c_str());
        return 2;
    }
    auto types = DwarfTypes::open(elf);
    if (!types) {
        std::fprintf(stderr, "glibc_layout_check: %s: no usable DWARF\n", path.c_str());
        return 2;
    }
    int bad = 0;
    const LockLayout table;
    auto field = [&](const char* type, const char* member, int64_t want) {
        auto got = types->memberOffset(type, member);
        std::printf("%s.%s: DWARF %s, table %lld\n", type, member, got ? std::to_string(*got).c_str() : "absent",
                    static_cast<long long>(want));
        if (!got || *got != want) {
            std::printf("DISAGREE: %s.%s\n", type, member);
            ++bad;
        }
    };
    field("pthread_mutex_t", "__data.__owner", table.mutexOwner);
    field("pthread_rwlock_t", "__data.__cur_writer", table.rwlockCurWriter);

    std::vector<Expected> names = kCommon;
    if (cancel) names.insert(names.end(), kSyscallCancel.begin(), kSyscallCancel.end());
    for (const auto& e : names) {
        bool there = elf->findSymbol(e.symbol).has_value();
        WaitFunction w = waitFunction(e.symbol);
        std::printf("%s: %s, read as %s%s\n", e.symbol, there ? "in libc" : "NOT in libc", waitKindName(w.kind), w.weak ? " (weak)" : "");
        if (!there || w.kind != e.kind) {
            std::printf("DISAGREE: %s (expected %s)\n", e.symbol, waitKindName(e.kind));
            ++bad;
        }
    }
    std::printf("%s\n", bad ? "the table disagrees with this libc" : "the table agrees with this libc");
    return bad ? 1 : 0;
}
