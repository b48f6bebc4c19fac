// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "symbols/cpython/exception_table.h"

using namespace pytstates;

// co_exceptiontable of CPython 3.11's
//   def f(a, b):
//       x = 1
//       with a:
//           y = 2
//           with b:
//               pass
// and its entries as dis._parse_exception_table reads them (in code units).
static const std::vector<uint8_t> kTable = {0x85, 0x05, 0x30, 0x03, 0x8a, 0x01, 0x18, 0x05, 0x8c, 0x0c, 0x30, 0x03,
                                            0x98, 0x04, 0x1c, 0x09, 0x9c, 0x03, 0x30, 0x03, 0x9f, 0x01, 0x1c, 0x09,
                                            0xa0, 0x03, 0x30, 0x03, 0xb0, 0x04, 0x34, 0x07, 0xb7, 0x01, 0x34, 0x07};

TEST(ExceptionTable, ParsesWhatDisReads) {
    auto entries = parseExceptionTable(kTable);
    ASSERT_EQ(entries.size(), 9u);
    struct Want {
        uint32_t start, end, target, depth;
    };
    const Want want[] = {{5, 10, 48, 1}, {10, 11, 24, 2}, {12, 24, 48, 1}, {24, 28, 28, 4}, {28, 31, 48, 1},
                         {31, 32, 28, 4}, {32, 35, 48, 1}, {48, 52, 52, 3}, {55, 56, 52, 3}};
    for (size_t i = 0; i < 9; ++i) {
        EXPECT_EQ(entries[i].start, want[i].start) << i;
        EXPECT_EQ(entries[i].end, want[i].end) << i;
        EXPECT_EQ(entries[i].target, want[i].target) << i;
        EXPECT_EQ(entries[i].depth, want[i].depth) << i;
        EXPECT_TRUE(entries[i].lasti) << i;
    }
}

TEST(ExceptionTable, InnermostHandlerAndItsChain) {
    auto entries = parseExceptionTable(kTable);
    // The inner with's BEFORE_WITH (unit 9) is in the outer body only: depth 1.
    auto outer = handlerAt(entries, 9);
    ASSERT_TRUE(outer);
    EXPECT_EQ(outer->target, 48u);
    EXPECT_EQ(outer->depth, 1u);
    // The inner body (unit 10): the inner with's handler at depth 2; its handler's first
    // instruction (24) leads to a cleanup (28), whose code is in the outer body (48).
    auto inner = handlerAt(entries, 10);
    ASSERT_TRUE(inner);
    EXPECT_EQ(inner->target, 24u);
    EXPECT_EQ(inner->depth, 2u);
    EXPECT_EQ(handlerAt(entries, 24)->target, 28u);
    EXPECT_EQ(handlerAt(entries, 28)->target, 48u);
    EXPECT_FALSE(handlerAt(entries, 0));
    EXPECT_FALSE(handlerAt(entries, 11));
    EXPECT_FALSE(handlerAt(entries, 100));
}

TEST(ExceptionTable, BadTablesEndTheList) {
    EXPECT_TRUE(parseExceptionTable({}).empty());
    EXPECT_TRUE(parseExceptionTable({0x05, 0x05, 0x30, 0x03}).empty());  // no start-of-entry bit
    EXPECT_TRUE(parseExceptionTable({0x85, 0x45}).empty());              // ends mid-varint
    std::vector<uint8_t> endless(64, 0x7f);
    endless[0] = 0xff;
    EXPECT_TRUE(parseExceptionTable(endless).empty());  // a varint too large for a code object
}
