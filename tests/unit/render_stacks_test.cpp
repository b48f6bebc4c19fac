// SPDX-License-Identifier: Apache-2.0
// The one renderer of stacks (commands/render/render_stacks): a greenlet's and an asyncio task's frames,
// with their locals, read as each part of the report has always shown them.
#include <gtest/gtest.h>

#include <algorithm>

#include "commands/render/render_stacks.h"
#include "symbols/cpython/asyncio_tasks.h"
#include "symbols/greenlet/greenlets.h"

namespace pytstates {
namespace {

std::vector<PyFrame> twoFrames() {
    PyFrame inner{0x1000, "wait", "/usr/lib/python3.11/asyncio/locks.py", 212};
    inner.localsRead = true;
    inner.locals.push_back({"self", "arg", "Event", std::nullopt, "<Event at 0x7f00>", 0x7f00});
    inner.locals.push_back({"fut", "local", "int", std::string("3"), "3", 0x7f10});
    PyFrame outer{0x2000, "main", "/srv/app.py", 9};  // --locals not read for it: nothing under it
    return {inner, outer};
}

TEST(RenderStacks, GreenletAndTaskShareFramesAndLocals) {
    GreenletInfo g;
    g.frames = twoFrames();
    AsyncioTask t;
    t.frames = twoFrames();
    std::ostringstream numbered, tree;
    renderFramesText(numbered, "  ", g.frames, FrameLines::Numbered, 0);
    renderFramesText(tree, "  ", t.frames, FrameLines::Tree, 0);
    EXPECT_EQ(numbered.str(),
              "  #0 wait (/usr/lib/python3.11/asyncio/locks.py:212)\n"
              "      Arguments:\n"
              "        self = <Event at 0x7f00>\n"
              "      Locals:\n"
              "        fut = 3\n"
              "  #1 main (/srv/app.py:9)\n");
    EXPECT_EQ(tree.str(),
              "  wait  /usr/lib/python3.11/asyncio/locks.py:212\n"
              "      Arguments:\n"
              "        self = <Event at 0x7f00>\n"
              "      Locals:\n"
              "        fut = 3\n"
              "  main  /srv/app.py:9\n");
}

// A narrow terminal: a path cut at the front to fit the line, the file name and its nearest
// directories kept; a path that fits, whole.
TEST(RenderStacks, PathsCutToTheWidth) {
    std::ostringstream numbered, tree;
    renderFramesText(numbered, "  ", twoFrames(), FrameLines::Numbered, 40);
    renderFramesText(tree, "  ", twoFrames(), FrameLines::Tree, 41);
    EXPECT_EQ(numbered.str().substr(0, numbered.str().find('\n') + 1), "  #0 wait (\xe2\x80\xa6/asyncio/locks.py:212)\n");
    EXPECT_NE(numbered.str().find("  #1 main (/srv/app.py:9)\n"), std::string::npos);
    EXPECT_EQ(tree.str().substr(0, tree.str().find('\n') + 1), "  wait  \xe2\x80\xa6/python3.11/asyncio/locks.py:212\n");
    PyFrame f{0x1000, "wait", "/usr/lib/python3.11/asyncio/locks.py", 212};
    EXPECT_EQ(frameCall("at ", f, ", native sem_wait", 0), "at wait (/usr/lib/python3.11/asyncio/locks.py:212), native sem_wait");
    EXPECT_EQ(frameCall("at ", f, ", native sem_wait", 48), "at wait (\xe2\x80\xa6/locks.py:212), native sem_wait");
}

TEST(RenderStacks, FramesJsonCarryLocalsOnlyWhereRead) {
    std::string out;
    JsonWriter w(out);
    renderFramesJson(w, twoFrames());
    // The writer indents; no value here holds a space, so the bytes compare without them.
    out.erase(std::remove_if(out.begin(), out.end(), [](char c) { return c == ' ' || c == '\n'; }), out.end());
    EXPECT_EQ(out,
              "[{\"file\":\"/usr/lib/python3.11/asyncio/locks.py\",\"function\":\"wait\",\"line\":212,\"locals\":["
              "{\"address\":\"0x7f00\",\"kind\":\"arg\",\"name\":\"self\",\"type\":\"Event\",\"value\":null},"
              "{\"address\":\"0x7f10\",\"kind\":\"local\",\"name\":\"fut\",\"type\":\"int\",\"value\":\"3\"}]},"
              "{\"file\":\"/srv/app.py\",\"function\":\"main\",\"line\":9}]");
}

TEST(RenderStacks, StateWords) {
    EXPECT_EQ(stateWords("unstarted"), "not started");
    EXPECT_EQ(stateWords("suspended"), "suspended");
    EXPECT_EQ(stateWords("pending"), "pending");
}

}  // namespace
}  // namespace pytstates
