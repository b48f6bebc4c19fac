// SPDX-License-Identifier: Apache-2.0
// /proc/PID/maps lines (symbols/text/proc_maps): every field, paths with spaces or " (deleted)",
// anonymous mappings, and lines that do not parse. The text is made here: no file is opened.
#include <gtest/gtest.h>

#include "symbols/text/proc_maps.h"

using namespace pytstates;

TEST(ProcMaps, EveryFieldOfEachLine) {
    const std::string text =
        "55d0c4a00000-55d0c4a2d000 r--p 00000000 fe:01 1835042                    /usr/bin/python3.11\n"
        "7f2a1c000000-7f2a1c021000 rw-p 00000000 00:00 0 \n"
        "7f2a1d000000-7f2a1d001000 ---p 00001000 103:02 77                        /srv/svc/lib a b.so (deleted)\n"
        "not a mapping\n"
        "7ffd5a3c1000-7ffd5a3e2000 rw-p 00000000 00:00 0                          [stack]";
    auto lines = parseMaps(text);
    ASSERT_EQ(lines.size(), 4u) << "the line that does not parse is left out";
    EXPECT_EQ(lines[0].start, 0x55d0c4a00000u);
    EXPECT_EQ(lines[0].end, 0x55d0c4a2d000u);
    EXPECT_TRUE(lines[0].readable);
    EXPECT_EQ(lines[0].major, 0xfeu);
    EXPECT_EQ(lines[0].minor, 1u);
    EXPECT_EQ(lines[0].inode, 1835042u);
    EXPECT_EQ(lines[0].path, "/usr/bin/python3.11");
    EXPECT_TRUE(lines[1].path.empty()) << "anonymous";
    EXPECT_EQ(lines[1].inode, 0u);
    EXPECT_FALSE(lines[2].readable);
    EXPECT_EQ(lines[2].offset, 0x1000u);
    EXPECT_EQ(lines[2].major, 0x103u);
    EXPECT_EQ(lines[2].path, "/srv/svc/lib a b.so (deleted)") << "spaces kept, the kernel's suffix left to the caller";
    EXPECT_EQ(lines[3].path, "[stack]") << "the last line needs no newline";
}
