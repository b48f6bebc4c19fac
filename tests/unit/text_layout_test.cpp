// SPDX-License-Identifier: Apache-2.0
// Text for a terminal (commands/text_layout, commands/summary): every line within the width,
// none wrapped without one, the answer last with the exit status it implies.
#include <gtest/gtest.h>

#include <csignal>
#include <sstream>

#include "commands/summary.h"
#include "commands/text_layout.h"

namespace pytstates {
namespace {

TEST(TextLayout, FoldKeepsEveryLineWithinTheWidthAndEveryWord) {
    std::string line = "  #7  0x00007f33411f715d pybind11::cpp_function::initialize<\xe2\x80\xa6>(\xe2\x80\xa6)::{lambda(\xe2\x80\xa6)#3}::_FUN"
                       "  pybind11.h:223  (seed_module.cpython-311-x86_64-linux-gnu.so+0x1515d)   \n";
    std::string folded = foldLines(line + "short\n", 40);
    std::istringstream lines(folded);
    std::string l, words;
    size_t count = 0;
    while (std::getline(lines, l)) {
        EXPECT_LE(displayWidth(l), 40u) << l;
        ++count;
        words += l + " ";
    }
    EXPECT_GT(count, 3u);
    EXPECT_NE(words.find("pybind11.h:223"), std::string::npos);
    EXPECT_EQ(folded.substr(folded.size() - 6), "short\n");
    EXPECT_EQ(foldLines(line, 0), line);  // no terminal: as it is
}

TEST(TextLayout, WidthCountsCharactersNotBytesOrColour) {
    EXPECT_EQ(displayWidth("a\xe2\x80\x94" "b"), 3u);
    EXPECT_EQ(displayWidth(paint("CRASH", Paint::Crash, true)), 5u);
    EXPECT_EQ(paint("CRASH", Paint::Crash, false), "CRASH");
}

TEST(TextLayout, WrapWithoutWidthIsOneLine) {
    std::string text = std::string(150, 'x') + " and more words";
    EXPECT_EQ(wrapText(text, 0, "  "), "  " + text + "\n");
    std::istringstream lines(wrapText("one two three four five six seven eight nine ten eleven twelve thirteen", 40, "    "));
    std::string l;
    while (std::getline(lines, l)) EXPECT_LE(l.size(), 40u);
}

TEST(Summary, CrashHangAndFindingsSetTheExitStatus) {
    Report report;
    RenderOptions check;
    check.command = Command::Check;
    EXPECT_EQ(reportExitStatus(report), 0);
    EXPECT_EQ(summaryLine(report, check), "pytstates: no findings; exit 0\n");

    Finding orphan;
    orphan.code = FindingCode::OrphanTstate;  // a warning: not an exit status of 1
    report.findings.push_back(orphan);
    EXPECT_EQ(reportExitStatus(report), 0);
    EXPECT_EQ(summaryLine(report, check), "pytstates: orphan-tstate (1 warning); exit 0\n");

    report.crash = CrashReport{};
    report.crash->signal.signal = SIGSEGV;
    report.crash->signal.lwp = 29634;
    EXPECT_EQ(reportExitStatus(report), 1);
    Finding stale;
    stale.code = FindingCode::StaleTstate;
    report.findings.push_back(stale);
    EXPECT_EQ(summaryLine(report, check), "pytstates: CRASH SIGSEGV LWP 29634 \xe2\x80\x94 stale-tstate (1 error, 1 warning); exit 1\n");

    Report hang;
    Finding blocked;
    blocked.code = FindingCode::GilHeldWhileBlocked;  // a warning, but a hang: 1
    hang.findings.push_back(blocked);
    EXPECT_EQ(reportExitStatus(hang), 1);
    Finding deadlock;
    deadlock.code = FindingCode::Deadlock;
    deadlock.cycle.resize(2);
    Report cycle;
    cycle.findings.push_back(deadlock);
    EXPECT_EQ(summaryLine(cycle, check), "pytstates: HANG deadlock, 2 threads \xe2\x80\x94 (1 error); exit 1\n");
}

}  // namespace
}  // namespace pytstates
