// SPDX-License-Identifier: Apache-2.0
// Deadlocks through asyncio tasks (commands/analysis/tasks: addTaskFindings) on scans made by hand:
// a task may wait for several (a gather's children), a cycle may go through gathers, and a chain
// thousands deep is followed without recursion.
#include <gtest/gtest.h>

#include "commands/analysis/tasks.h"

namespace pytstates {
namespace {

// A pending task `address` waiting, through `via` (future `future`), for each task of `waitsFor`.
AsyncioTask task(uint64_t address, const std::string& via, uint64_t future, std::vector<uint64_t> waitsFor) {
    AsyncioTask t;
    t.address = address;
    t.name = "t" + std::to_string(address);
    t.state = "pending";
    if (waitsFor.empty()) return t;
    StackWait w;
    w.kind = via;
    w.future = w.object = future;
    if (via == "task") w.task = future;
    t.waitsOn = w;
    for (uint64_t to : waitsFor) t.waitsFor.push_back({to, via, future});
    return t;
}

std::vector<Finding> deadlocks(std::vector<AsyncioTask> tasks) {
    Report report;
    AsyncioScan scan;
    scan.tasks = std::move(tasks);
    report.asyncio.push_back(std::move(scan));
    addTaskFindings(report);
    return report.findings;
}

TEST(TaskCycles, ThroughGathers) {
    // 1 awaits gather(2), 2 awaits gather(3), 3 awaits 1; 4 awaits 1 (waits on the cycle, not in it).
    auto found = deadlocks({task(1, "gather", 0x100, {2}), task(2, "gather", 0x200, {3}), task(3, "task", 1, {1}), task(4, "task", 1, {1})});
    ASSERT_EQ(found.size(), 1u);
    const auto& c = found[0].taskCycle;
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(found[0].code, FindingCode::Deadlock);
    EXPECT_EQ(c[0].task, 1u);
    EXPECT_EQ(c[0].waitsFor, "gather");
    EXPECT_EQ(c[0].object, 0x100u);
    EXPECT_EQ(c[0].heldByTask, 2u);
    EXPECT_EQ(c[1].waitsFor, "gather");
    EXPECT_EQ(c[1].heldByTask, 3u);
    EXPECT_EQ(c[2].waitsFor, "task");
    EXPECT_EQ(c[2].object, 1u);
    EXPECT_EQ(c[2].heldByTask, 1u);
}

TEST(TaskCycles, GatherOfSeveralChildrenReachesTheCycleThroughAnyOfThem) {
    // 1 awaits gather(2, 3); 2 is done waiting for nothing; 3 awaits 1.
    auto found = deadlocks({task(1, "gather", 0x100, {2, 3}), task(2, "", 0, {}), task(3, "task", 1, {1})});
    ASSERT_EQ(found.size(), 1u);
    ASSERT_EQ(found[0].taskCycle.size(), 2u);
    EXPECT_EQ(found[0].taskCycle[0].heldByTask, 3u);
}

TEST(TaskCycles, DiamondIsNoCycle) {
    EXPECT_TRUE(deadlocks({task(1, "gather", 0x100, {2, 3}), task(2, "task", 4, {4}), task(3, "task", 4, {4}), task(4, "", 0, {})}).empty());
}

TEST(TaskCycles, TwoCyclesTwoFindings) {
    auto found = deadlocks({task(1, "task", 2, {2}), task(2, "task", 1, {1}), task(3, "shield", 0x300, {4}), task(4, "task", 3, {3})});
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[1].taskCycle[0].waitsFor, "shield");
}

TEST(TaskCycles, DeepChainWithoutRecursion) {
    // 5,000 tasks each awaiting the next, the last awaiting the first.
    std::vector<AsyncioTask> tasks;
    const uint64_t n = 5000;
    for (uint64_t i = 1; i <= n; ++i) tasks.push_back(task(i, "task", i == n ? 1 : i + 1, {i == n ? 1 : i + 1}));
    auto found = deadlocks(std::move(tasks));
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].taskCycle.size(), n);
}

}  // namespace
}  // namespace pytstates
