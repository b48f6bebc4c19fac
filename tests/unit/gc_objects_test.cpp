// SPDX-License-Identifier: Apache-2.0
// The collector's lists walked in this test's own memory, built as CPython lays them out: intact
// lists, a cycle that does not pass through the head, a link to unmapped memory and a limit. Each
// must end (no hang) and say why when it ends early.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "symbols/cpython/gc_objects.h"

#include "tests/unit/own_memory.h"

using namespace pytstates;

namespace {

// PyGC_Head followed by a PyObject's ob_refcnt and ob_type.
struct alignas(16) Node {
    uint64_t next, prev, refcnt, type;
};

// Where _gc_runtime_state's lists sit in this fake interpreter: three generations, then permanent.
struct alignas(16) FakeState {
    uint64_t before[4];
    uint64_t lists[4][3];  // 24-byte gc_generation: head (next, prev), threshold + count
};

uint64_t at(const void* p) { return reinterpret_cast<uint64_t>(p); }

CPythonLayout layoutFor() {
    CPythonLayout l;
    l.gcGenerations = offsetof(FakeState, lists);
    l.gcPermanent = offsetof(FakeState, lists) + 3 * 24;
    return l;
}

void link(uint64_t* head, std::vector<Node>& nodes) {
    uint64_t prev = at(head);
    for (auto& n : nodes) {
        n.prev = prev;
        reinterpret_cast<uint64_t*>(prev)[0] = at(&n);
        prev = at(&n);
    }
    reinterpret_cast<uint64_t*>(prev)[0] = at(head);
    head[1] = prev;
}

struct Visit {
    std::vector<uint64_t> objects, types;
};

GcWalk walk(const FakeState& state, Visit* v, size_t max = 1000) {
    OwnMemory memory;
    return walkGcObjects(memory, layoutFor(), at(&state), [v](uint64_t o, uint64_t t) {
        v->objects.push_back(o);
        v->types.push_back(t);
    }, max);
}

FakeState emptyState() {
    FakeState s{};
    for (auto& list : s.lists) list[0] = list[1] = at(list);
    return s;
}

}  // namespace

TEST(GcObjects, EveryListWalkedWithEachObjectsType) {
    FakeState s = emptyState();
    std::vector<Node> young(3), old(2), permanent(1);
    for (size_t i = 0; i < young.size(); ++i) young[i].type = 0x1000 + i;
    link(s.lists[0], young);
    link(s.lists[2], old);
    link(s.lists[3], permanent);
    young[1].next |= 1;  // NEXT_MASK_UNREACHABLE, set during a collection
    young[2].prev |= 2;  // _gc_prev's flag bits
    Visit v;
    GcWalk w = walk(s, &v);
    EXPECT_EQ(w.problem, "");
    ASSERT_EQ(w.objects, 6u);
    EXPECT_EQ(v.objects[0], at(&young[0]) + 16);  // the object follows its PyGC_Head
    EXPECT_EQ(v.types[2], 0x1002u);
    EXPECT_EQ(v.objects[5], at(&permanent[0]) + 16);
}

TEST(GcObjects, CycleAwayFromTheHeadEndsTheList) {
    FakeState s = emptyState();
    std::vector<Node> nodes(3);
    link(s.lists[0], nodes);
    nodes[2].next = at(&nodes[1]);  // loops back without passing the head
    Visit v;
    GcWalk w = walk(s, &v);
    EXPECT_EQ(w.objects, 3u);
    EXPECT_NE(w.problem.find("is broken at"), std::string::npos) << w.problem;
}

TEST(GcObjects, UnreadableLinkAndLimit) {
    FakeState s = emptyState();
    std::vector<Node> nodes(5);
    link(s.lists[1], nodes);
    nodes[1].next = 0x10;  // unmapped
    Visit v;
    GcWalk w = walk(s, &v);
    EXPECT_EQ(w.objects, 2u);
    EXPECT_NE(w.problem.find("unreadable 0x10"), std::string::npos) << w.problem;

    FakeState s2 = emptyState();
    std::vector<Node> many(10);
    link(s2.lists[0], many);
    Visit v2;
    GcWalk w2 = walk(s2, &v2, 4);
    EXPECT_EQ(w2.objects, 4u);
    EXPECT_NE(w2.problem.find("longer than 4"), std::string::npos) << w2.problem;
}

TEST(GcObjects, FreeThreadedBuildsHaveNoLists) {
    CPythonLayout l;
    l.freeThreaded = true;
    OwnMemory memory;
    GcWalk w = walkGcObjects(memory, l, 0x1000, [](uint64_t, uint64_t) { FAIL(); });
    EXPECT_EQ(w.objects, 0u);
    EXPECT_NE(w.problem.find("free-threaded"), std::string::npos);
}
