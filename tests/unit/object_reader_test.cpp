// SPDX-License-Identifier: Apache-2.0
// ObjectReader and FrameReader on garbage: objects built in this process's memory whose sizes,
// links and pointers are wrong give nullopt or a bounded answer, never a loop or a huge allocation;
// Python's reprs of floats, str and bytes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "symbols/cpython/frames.h"
#include "symbols/cpython/object_reader.h"
#include "own_memory.h"

namespace pytstates {
namespace {

uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

struct Fixture {
    OwnMemory memory;
    CPythonLayout layout;
    Fixture() { EXPECT_TRUE(tableLayout(11, false, Machine::X86_64, &layout)); }
    // A type object named `name` (tp_base null unless set).
    std::vector<uint64_t> type(const char* name) {
        std::vector<uint64_t> t(128, 0);
        t[layout.typeName / 8] = addr(name);
        return t;
    }
};

TEST(ObjectReader, GarbageGivesBoundedAnswers) {
    Fixture f;
    ObjectReader objects(f.memory, f.layout);
    auto started = std::chrono::steady_clock::now();

    // Unreadable or null pointers.
    EXPECT_FALSE(objects.shortRepr(0));
    EXPECT_FALSE(objects.shortRepr(0x10));
    EXPECT_FALSE(objects.typeName(0x10));
    EXPECT_FALSE(objects.attribute(0x10, "x"));
    EXPECT_FALSE(objects.integer(0x10));

    // A type whose tp_base is itself: isInstance ends.
    auto selfBase = f.type("Loop");
    selfBase[f.layout.typeBase / 8] = addr(selfBase.data());
    std::vector<uint64_t> object(8, 0);
    object[f.layout.objectType / 8] = addr(selfBase.data());
    EXPECT_TRUE(objects.isInstance(addr(object.data()), "Loop"));
    EXPECT_FALSE(objects.isInstance(addr(object.data()), "int"));
    EXPECT_EQ(objects.shortRepr(addr(object.data())), "<Loop at " + std::string("0x") + [&] {
        char b[32];
        std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(addr(object.data())));
        return std::string(b);
    }() + ">");

    // A list claiming 2^31 items over a 4-item array: at most maxCount read, or nothing.
    auto listType = f.type("list");
    std::vector<uint64_t> items = {addr(object.data()), 0, 0, 0};
    std::vector<uint64_t> list(8, 0);
    list[f.layout.objectType / 8] = addr(listType.data());
    list[f.layout.varObjectSize / 8] = uint64_t(1) << 31;
    list[f.layout.listItems / 8] = addr(items.data());
    auto read = objects.listItems(addr(list.data()), 4);
    ASSERT_TRUE(read);
    EXPECT_EQ(read->size(), 4u);
    list[f.layout.varObjectSize / 8] = uint64_t(1) << 40;  // not a list's size
    EXPECT_FALSE(objects.listItems(addr(list.data()), 4));

    // A deque of 2^30 items whose block links back to itself: maxCount items, then it stops.
    auto dequeType = f.type("collections.deque");
    std::vector<uint64_t> block(66, addr(object.data()));
    block[65] = addr(block.data());  // rightlink: itself
    std::vector<uint64_t> deque(10, 0);
    deque[f.layout.objectType / 8] = addr(dequeType.data());
    deque[f.layout.varObjectSize / 8] = uint64_t(1) << 30;
    deque[f.layout.dequeLeftBlock / 8] = addr(block.data());
    deque[f.layout.dequeLeftIndex / 8] = 3;
    auto dq = objects.dequeItems(addr(deque.data()), 1000);
    ASSERT_TRUE(dq);
    EXPECT_EQ(dq->size(), 1000u);

    // A set with a 2^31-slot table over 16 slots: at most what was asked, at most 2^20 slots scanned.
    auto setType = f.type("set");
    std::vector<uint64_t> table(16, 0);
    std::vector<uint64_t> set(10, 0);
    set[f.layout.objectType / 8] = addr(setType.data());
    set[f.layout.setMask / 8] = (uint64_t(1) << 31) - 1;
    set[f.layout.setTable / 8] = addr(table.data());
    auto members = objects.setItems(addr(set.data()), 10);
    EXPECT_TRUE(!members || members->size() <= 10);

    // A dict whose keys claim 2^39 entries: a lookup reads nothing; a truncated listing at most
    // what was asked (the bytes past the keys are this process's heap: readable garbage).
    auto dictType = f.type("dict");
    std::vector<uint64_t> keys(16, 0);
    int64_t huge = int64_t(1) << 39;
    std::memcpy(reinterpret_cast<char*>(keys.data()) + f.layout.dictKeysNentries, &huge, 8);
    std::vector<uint64_t> dict(8, 0);
    dict[f.layout.objectType / 8] = addr(dictType.data());
    dict[f.layout.dictKeys / 8] = addr(keys.data());
    auto entries = objects.dictItems(addr(dict.data()), 10);
    EXPECT_TRUE(!entries || entries->size() <= 10);
    EXPECT_FALSE(objects.dictValue(addr(dict.data()), "k"));

    // An int claiming 2^40 digits: not read.
    auto intType = f.type("int");
    std::vector<uint64_t> big(8, 0);
    big[f.layout.objectType / 8] = addr(intType.data());
    big[f.layout.longTag / 8] = uint64_t(1) << 40;
    EXPECT_FALSE(objects.integer(addr(big.data())));
    big[f.layout.longTag / 8] = 1;  // one digit: 5
    big[f.layout.longDigits / 8] = 5;
    EXPECT_EQ(objects.integer(addr(big.data())), 5);
    EXPECT_EQ(objects.shortRepr(addr(big.data())), "5");

    // Frames: garbage gives nothing.
    FrameReader frames(f.memory, f.layout);
    EXPECT_TRUE(frames.locals(addr(object.data())).empty());
    EXPECT_TRUE(frames.valueStack(addr(object.data())).empty());
    EXPECT_EQ(frames.codeOf(0x10), 0u);
    EXPECT_EQ(frames.yieldFrom(0x10), 0u);
    EXPECT_EQ(frames.generatorFrame(0x10), 0u);

    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(ObjectReader, PythonReprs) {
    EXPECT_EQ(pythonFloatRepr(1.5), "1.5");
    EXPECT_EQ(pythonFloatRepr(100.0), "100.0");
    EXPECT_EQ(pythonFloatRepr(-0.25), "-0.25");
    EXPECT_EQ(pythonFloatRepr(1e16), "1e+16");
    EXPECT_EQ(pythonFloatRepr(1e15), "1000000000000000.0");
    EXPECT_EQ(pythonFloatRepr(0.0001), "0.0001");
    EXPECT_EQ(pythonFloatRepr(1e-05), "1e-05");
    EXPECT_EQ(pythonFloatRepr(0.1 + 0.2), "0.30000000000000004");
    EXPECT_EQ(pythonFloatRepr(1.2345678901234568e+17), "1.2345678901234568e+17");
    EXPECT_EQ(pythonFloatRepr(-0.0), "-0.0");
    EXPECT_EQ(pythonStrRepr("abc"), "'abc'");
    EXPECT_EQ(pythonStrRepr("it's"), "\"it's\"");
    EXPECT_EQ(pythonStrRepr("a'b\"c"), "'a\\'b\"c'");
    EXPECT_EQ(pythonStrRepr("tab\there\n"), "'tab\\there\\n'");
    // What str.isprintable() refuses, as repr() escapes it (Python: repr("\x9b\u202e\xa0\U000f0000é€")).
    EXPECT_EQ(pythonStrRepr("\xc2\x9b\xe2\x80\xae\xc2\xa0\xf3\xb0\x80\x80\xc3\xa9\xe2\x82\xac"),
              "'\\x9b\\u202e\\xa0\\U000f0000\xc3\xa9\xe2\x82\xac'");
    EXPECT_EQ(pythonBytesRepr({'a', 'b', 0, 0xff}), "b'ab\\x00\\xff'");
}

}  // namespace
}  // namespace pytstates
