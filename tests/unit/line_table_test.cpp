// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "symbols/cpython/line_table.h"

using namespace pytstates;

TEST(LineTable, Lnotab) {
    // addr 0..6 line 10, 6..10 line 12, 10.. line 11
    std::vector<uint8_t> t = {6, 2, 4, static_cast<uint8_t>(-1)};
    EXPECT_EQ(lineFromLnotab(t, 10, 0), 10);
    EXPECT_EQ(lineFromLnotab(t, 10, 5), 10);
    EXPECT_EQ(lineFromLnotab(t, 10, 6), 12);
    EXPECT_EQ(lineFromLnotab(t, 10, 12), 11);
}
