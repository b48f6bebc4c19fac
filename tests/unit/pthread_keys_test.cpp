// SPDX-License-Identifier: Apache-2.0
// glibc thread-specific data read from outside the process, the way pthread_getspecific reads it
// inside: a child process creates keys below and above 32, sets them in two threads, deletes and
// re-creates one, and tells what it did; the test reads the child with a LiveTarget.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <thread>
#include <vector>

#include "symbols/glibc/pthread_keys.h"
#include "symbols/live/live_target.h"

using namespace pytstates;

namespace {

struct ChildFacts {
    pthread_t mainThread, otherThread;
    unsigned keys[40];
    unsigned staleKey;      // deleted and re-created after the main thread set it
    unsigned deletedKey;    // deleted for good
    unsigned unsetKey;      // created, never set
};

uintptr_t valueFor(int thread, unsigned key) { return 0x1000 * (thread + 1) + key; }

[[noreturn]] void child(int fd) {
    ChildFacts f{};
    for (unsigned& k : f.keys) pthread_key_create(&k, nullptr);
    for (unsigned k : f.keys) pthread_setspecific(k, reinterpret_cast<void*>(valueFor(0, k)));
    pthread_key_create(&f.staleKey, nullptr);
    pthread_setspecific(f.staleKey, reinterpret_cast<void*>(0xdead0));
    pthread_key_delete(f.staleKey);
    unsigned again;
    pthread_key_create(&again, nullptr);  // the lowest free key: the same number, a new seq
    if (again != f.staleKey) _exit(3);
    pthread_key_create(&f.unsetKey, nullptr);
    pthread_key_create(&f.deletedKey, nullptr);  // deleted last, so no later create reuses it
    pthread_setspecific(f.deletedKey, reinterpret_cast<void*>(0xbeef0));
    pthread_key_delete(f.deletedKey);
    f.mainThread = pthread_self();
    std::thread other([&] {
        for (unsigned k : f.keys) pthread_setspecific(k, reinterpret_cast<void*>(valueFor(1, k)));
        f.otherThread = pthread_self();
        if (write(fd, &f, sizeof f) != sizeof f) _exit(4);
        for (;;) pause();
    });
    for (;;) pause();
}

}  // namespace

TEST(PthreadKeys, ReadsEverySlotOfEveryThreadLikePthreadGetspecific) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) child(fds[1]);
    ChildFacts f{};
    ASSERT_EQ(read(fds[0], &f, sizeof f), static_cast<ssize_t>(sizeof f));
    {
        LiveOptions options;
        options.pid = pid;
        options.stop = false;
        LiveTarget target(options);
        auto glibc = findGlibcKeys(target);
        ASSERT_FALSE(glibc.empty());
        EXPECT_EQ(glibc[0].source, "thread_db");
        const GlibcKeys& keys = glibc[0];
        uint64_t threads[2] = {static_cast<uint64_t>(f.mainThread), static_cast<uint64_t>(f.otherThread)};
        for (int t = 0; t < 2; ++t) {
            for (unsigned k : f.keys) {
                KeySlot slot = readKeySlot(target, keys, threads[t], k);
                EXPECT_EQ(slot.status, KeySlot::Status::Set) << "thread " << t << " key " << k;
                EXPECT_EQ(slot.value, valueFor(t, k)) << "thread " << t << " key " << k;
            }
            EXPECT_EQ(readKeySlot(target, keys, threads[t], f.unsetKey).status, KeySlot::Status::Unset);
        }
        EXPECT_GE(f.keys[39], 32u);  // the second-level blocks are read too
        KeySlot stale = readKeySlot(target, keys, threads[0], f.staleKey);
        EXPECT_EQ(stale.status, KeySlot::Status::Stale);
        EXPECT_EQ(stale.value, 0xdead0u);
        EXPECT_NE(stale.slotSeq, stale.keySeq);
        EXPECT_EQ(readKeySlot(target, keys, threads[0], f.deletedKey).status, KeySlot::Status::KeyNotInUse);
        // the threads as glibc lists them: both, with their tids
        std::map<uint64_t, int> lwps;
        for (const auto& t : target.threads()) lwps[t.pthread] = t.lwp;
        EXPECT_EQ(lwps.count(threads[0]), 1u);
        EXPECT_EQ(lwps.count(threads[1]), 1u);
        EXPECT_EQ(lwps[threads[0]], pid);
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
}
