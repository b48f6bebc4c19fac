// SPDX-License-Identifier: Apache-2.0
// Text for a terminal (commands/render/text_layout, commands/render/summary): every line within the width,
// none wrapped without one, the answer last with the exit status it implies.
#include <gtest/gtest.h>

#include <csignal>
#include <sstream>

#include "commands/render/summary.h"
#include "commands/render/text_layout.h"

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

// A Python file's path: whole unless the line has no room, then its tail after "…/", as many
// directories as fit; never the file name cut.
TEST(TextLayout, PathsKeepTheirTailAndTheFileName) {
    const std::string path = "/usr/lib/python3.11/asyncio/locks.py";  // 36 columns
    const std::string cut = "\xe2\x80\xa6/";
    EXPECT_EQ(fitPath(path, 0), path);  // no terminal
    EXPECT_EQ(fitPath(path, 36), path);
    EXPECT_EQ(fitPath(path, 35), cut + "lib/python3.11/asyncio/locks.py");
    EXPECT_EQ(fitPath(path, 30), cut + "python3.11/asyncio/locks.py");
    EXPECT_EQ(fitPath(path, 18), cut + "asyncio/locks.py");
    EXPECT_EQ(fitPath(path, 17), cut + "locks.py");
    EXPECT_EQ(fitPath(path, 3), cut + "locks.py");  // the name whole, wider than the room
    EXPECT_EQ(fitPath("<frozen importlib._bootstrap>", 5), "<frozen importlib._bootstrap>");
    EXPECT_EQ(fitPath("pkg/sub/mod.py", 10), cut + "mod.py");  // relative: the front cut too
    EXPECT_EQ(displayWidth(fitPath(path, 30)), 29u);

    std::string line = lineWithPath("    #0 wait (", path, ":212)", 40);
    EXPECT_EQ(line, "    #0 wait (" + cut + "asyncio/locks.py:212)");
    EXPECT_LE(displayWidth(line), 40u);
    EXPECT_EQ(lineWithPath("    #0 wait (", path, ":212)", 0), "    #0 wait (" + path + ":212)");
    EXPECT_EQ(lineWithPath("    #0 wait (", path, ":212)", 54), "    #0 wait (" + path + ":212)");  // it fits, just
    EXPECT_EQ(lineWithPath("    #0 wait (", path, ":212)", 53), "    #0 wait (" + cut + "lib/python3.11/asyncio/locks.py:212)");
    // No cut fits the line: folded at the path's word, the path whole on the continuation line
    // (indented 4 past the line's own) where it fits there; cut to that line's room where not.
    std::string before = "         LWP 24528 holds it as `first` in a with-block: take_with (";
    std::string held = lineWithPath(before, path, ":24), `with` at line 22", 80);
    EXPECT_EQ(held, before + path + ":24), `with` at line 22");
    EXPECT_EQ(foldLines(held + "\n", 80), "         LWP 24528 holds it as `first` in a with-block: take_with\n"
                                          "             (" + path + ":24), `with` at line 22\n");
    std::string deep = "/srv/a_project_with_a_rather_long_name/src/a_package_with_a_long_name/sub/long_paths_program.py";
    EXPECT_EQ(lineWithPath(before, deep, ":24), `with` at line 22", 80), before + cut + "src/a_package_with_a_long_name/sub/long_paths_program.py:24), `with` at line 22");
    std::string folded = foldLines(lineWithPath(before, deep, ":24), `with` at line 22", 80) + "\n", 80);
    EXPECT_EQ(folded, "         LWP 24528 holds it as `first` in a with-block: take_with\n"
                      "             (" + cut + "src/a_package_with_a_long_name/sub/long_paths_program.py:24),\n"
                      "             `with` at line 22\n");
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
