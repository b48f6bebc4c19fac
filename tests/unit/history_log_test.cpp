// SPDX-License-Identifier: Apache-2.0
// The recorded history's rules: one call seen by several breakpoints is one event, the limits
// hold, a thread state's last life starts at its last creation, and a saved history reads back
// the same; and the return instructions capstone finds in known bytes.
#include <gtest/gtest.h>

#include "commands/history/history_log.h"
#include "symbols/cpython/lifecycle_probes.h"

namespace pytstates {
namespace {

TEST(HistoryLog, OneCallSeenByNestedBreakpointsIsOneEvent) {
    HistoryLog log;
    // PyGILState_Ensure on LWP 7: new_threadstate returns, then PyThreadState_New returns it.
    log.record(LifecycleEvent::Created, "new_threadstate", true, 0x1000, 7, std::nullopt, {0x10, 0x20}, 0);
    log.record(LifecycleEvent::Created, "PyThreadState_New", true, 0x1000, 7, std::nullopt, {0x30, 0x40}, 0);
    log.record(LifecycleEvent::Cached, "PyThread_tss_set", false, 0x1000, 7, 3u, {0x50}, 0);
    // Release: Clear, then _PyThreadState_DeleteCurrent, then tstate_delete_common.
    log.record(LifecycleEvent::Cleared, "PyThreadState_Clear", false, 0x1000, 7, std::nullopt, {0x60, 0x70}, 0);
    log.record(LifecycleEvent::Deleted, "_PyThreadState_DeleteCurrent", false, 0x1000, 7, std::nullopt, {0x80}, 0);
    log.record(LifecycleEvent::Deleted, "tstate_delete_common", false, 0x1000, 7, std::nullopt, {0x90}, 0);
    auto events = log.events();
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].event, LifecycleEvent::Created);
    EXPECT_EQ(events[0].function, "PyThreadState_New");  // the outer function's return: its caller says more
    EXPECT_EQ(events[0].pcs, (std::vector<uint64_t>{0x30, 0x40}));
    EXPECT_EQ(events[1].event, LifecycleEvent::Cached);
    EXPECT_EQ(*events[1].key, 3u);
    EXPECT_EQ(events[2].event, LifecycleEvent::Deleted);
    EXPECT_EQ(events[2].pcs, (std::vector<uint64_t>{0x60, 0x70}));  // the outermost entry: the clear's caller
    EXPECT_EQ(log.hits(), 6u);
    EXPECT_EQ(log.recorded(), 3u);
}

TEST(HistoryLog, ADeleteOnAnotherThreadIsItsOwnEvent) {
    HistoryLog log;
    log.record(LifecycleEvent::Cleared, "PyThreadState_Clear", false, 0x1000, 7, std::nullopt, {}, 0);
    log.record(LifecycleEvent::Deleted, "PyThreadState_Delete", false, 0x1000, 8, std::nullopt, {}, 0);
    auto events = log.events();
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].event, LifecycleEvent::Cleared);
    EXPECT_EQ(events[1].lwp, 8);
}

TEST(HistoryLog, LimitsHold) {
    HistoryLog::Limits limits;
    limits.lifecyclePerTstate = 2;
    limits.usesPerTstate = 3;
    limits.tstates = 2;
    HistoryLog log(limits);
    for (int i = 0; i < 10; ++i) log.record(LifecycleEvent::Used, "PyEval_RestoreThread", false, 0x1000, 7, std::nullopt, {}, 0);
    for (uint32_t k = 0; k < 5; ++k) log.record(LifecycleEvent::Cached, "PyThread_tss_set", false, 0x1000, 7, k, {}, 0);
    EXPECT_EQ(log.events().size(), 5u);
    log.record(LifecycleEvent::Used, "PyEval_RestoreThread", false, 0x2000, 7, std::nullopt, {}, 0);
    log.record(LifecycleEvent::Used, "PyEval_RestoreThread", false, 0x3000, 7, std::nullopt, {}, 0);  // 0x1000 is the oldest: gone
    EXPECT_TRUE(log.lastLife(0x1000).empty());
    EXPECT_EQ(log.lastLife(0x3000).size(), 1u);
    EXPECT_EQ(log.recorded(), 17u);
    EXPECT_EQ(log.dropped(), 17u - 2u);
}

TEST(HistoryLog, LastLifeStartsAtTheLastCreation) {
    HistoryLog log;
    log.record(LifecycleEvent::Created, "PyThreadState_New", true, 0x1000, 7, std::nullopt, {}, 0);
    log.record(LifecycleEvent::Deleted, "PyThreadState_Delete", false, 0x1000, 7, std::nullopt, {}, 0);
    log.record(LifecycleEvent::Created, "PyThreadState_New", true, 0x1000, 9, std::nullopt, {}, 0);  // the address reused
    log.record(LifecycleEvent::Used, "PyEval_RestoreThread", false, 0x1000, 9, std::nullopt, {}, 0);
    auto life = log.lastLife(0x1000);
    ASSERT_EQ(life.size(), 2u);
    EXPECT_EQ(life[0].lwp, 9);
}

TEST(HistoryLog, SavedAndReadBack) {
    HistoryLog log;
    log.pid = 42;
    log.cannot = {"libpython3.13.so.1.0: x has no symbol"};
    log.record(LifecycleEvent::Created, "PyThreadState_New", true, 0x7f0000001000, 7, std::nullopt, {0x7f0000002000}, 1.5);
    log.record(LifecycleEvent::Cached, "PyThread_tss_set", false, 0x7f0000001000, 7, 2u, {0x7f0000003000}, 2.5);
    auto back = HistoryLog::fromJson(log.toJson());
    EXPECT_EQ(back->pid, 42);
    EXPECT_EQ(back->cannot, log.cannot);
    auto a = log.events(), b = back->events();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].seq, b[i].seq);
        EXPECT_EQ(a[i].event, b[i].event);
        EXPECT_EQ(a[i].tstate, b[i].tstate);
        EXPECT_EQ(a[i].key, b[i].key);
        EXPECT_EQ(a[i].pcs, b[i].pcs);
    }
    EXPECT_THROW(HistoryLog::fromJson("{\"events\": []}"), std::runtime_error);
    EXPECT_THROW(HistoryLog::fromJson("not json"), std::runtime_error);
    EXPECT_THROW(HistoryLog::fromJson("{\"pytstates_history\": 1, \"events\": [{\"seq\": 1, \"event\": \"eaten\", \"tstate\": \"0x1\"}]}"),
                 std::runtime_error);
}

TEST(ReturnInstructions, X86_64) {
    // push rbp; mov rbp,rsp; test edi,edi; je +1; ret; pop rbp; ret 8
    const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0x85, 0xff, 0x74, 0x01, 0xc3, 0x5d, 0xc2, 0x08, 0x00};
    auto rets = returnInstructions(*archForElfMachine(62 /* EM_X86_64 */), code, sizeof code);
    EXPECT_EQ(rets, (std::vector<uint64_t>{8, 10}));
}

TEST(ReturnInstructions, TailCall) {
    // test edi,edi; je +1; ret; jmp to -0x20 (out of the function: a tail call); jmp to itself (inside)
    const unsigned char code[] = {0x85, 0xff, 0x74, 0x01, 0xc3, 0xe9, 0xd6, 0xff, 0xff, 0xff, 0xeb, 0xfe};
    auto exits = functionExits(*archForElfMachine(62), code, sizeof code);
    EXPECT_EQ(exits.returns, (std::vector<uint64_t>{4}));
    EXPECT_EQ(exits.tailCalls, (std::vector<int64_t>{-0x20}));
}

TEST(ReturnInstructions, AArch64) {
    // stp x29, x30, [sp, #-16]!; ldp x29, x30, [sp], #16; ret
    const unsigned char code[] = {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6};
    auto rets = returnInstructions(*archForElfMachine(183 /* EM_AARCH64 */), code, sizeof code);
    EXPECT_EQ(rets, (std::vector<uint64_t>{8}));
}

}  // namespace
}  // namespace pytstates
