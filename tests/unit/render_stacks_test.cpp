// SPDX-License-Identifier: Apache-2.0
// The one renderer of stacks (commands/render/render_stacks): a greenlet's and an asyncio task's frames,
// with their locals, read as each part of the report has always shown them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

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
    renderFramesText(numbered, "  ", g.frames, FrameLines::Numbered, 0, SIZE_MAX);
    renderFramesText(tree, "  ", t.frames, FrameLines::Tree, 0, SIZE_MAX);
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
    renderFramesText(numbered, "  ", twoFrames(), FrameLines::Numbered, 40, SIZE_MAX);
    renderFramesText(tree, "  ", twoFrames(), FrameLines::Tree, 41, SIZE_MAX);
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
    w.beginObject();
    renderFramesJson(w, twoFrames(), SIZE_MAX);
    w.endObject();
    // The writer indents; no value here holds a space, so the bytes compare without them.
    out.erase(std::remove_if(out.begin(), out.end(), [](char c) { return c == ' ' || c == '\n'; }), out.end());
    EXPECT_EQ(out,
              "{\"frames\":[{\"file\":\"/usr/lib/python3.11/asyncio/locks.py\",\"function\":\"wait\",\"line\":212,\"locals\":["
              "{\"address\":\"0x7f00\",\"kind\":\"arg\",\"name\":\"self\",\"type\":\"Event\",\"value\":null},"
              "{\"address\":\"0x7f10\",\"kind\":\"local\",\"name\":\"fut\",\"type\":\"int\",\"value\":\"3\"}]},"
              "{\"file\":\"/srv/app.py\",\"function\":\"main\",\"line\":9}]}");
}

// --frames N shows the first N frames and says what it left out; the stack itself is whole.
TEST(RenderStacks, FramesLeftOutAreSaid) {
    std::ostringstream one, none, all;
    renderFramesText(one, "  ", twoFrames(), FrameLines::Numbered, 0, 1);
    renderFramesText(none, "  ", twoFrames(), FrameLines::Numbered, 0, 0);
    renderFramesText(all, "  ", twoFrames(), FrameLines::Numbered, 0, 2);
    EXPECT_NE(one.str().find("  #0 wait ("), std::string::npos);
    EXPECT_EQ(one.str().find("#1"), std::string::npos);
    EXPECT_EQ(one.str().substr(one.str().rfind("  \xe2")), "  \xe2\x80\xa6 1 more frame: --frames\n");
    EXPECT_EQ(none.str(), "  (2 frames not shown: --frames 0)\n");
    EXPECT_EQ(all.str().find("more frame"), std::string::npos);
    EXPECT_EQ(framesLeftOutWords(9, 5), "\xe2\x80\xa6 4 more frames: --frames");

    for (size_t shown : {size_t(0), size_t(1), size_t(2)}) {
        std::string out;
        JsonWriter w(out);
        w.beginObject();
        renderFramesJson(w, twoFrames(), shown);
        w.endObject();
        out.erase(std::remove_if(out.begin(), out.end(), [](char c) { return c == ' ' || c == '\n'; }), out.end());
        size_t functions = 0;
        for (size_t at = out.find("\"function\""); at != std::string::npos; at = out.find("\"function\"", at + 1)) ++functions;
        EXPECT_EQ(functions, shown);
        bool said = out.find("\"frames_not_shown\":" + std::to_string(2 - shown) + "}") != std::string::npos;
        EXPECT_EQ(said, shown < 2) << out;
    }
}

TEST(RenderStacks, StateWords) {
    EXPECT_EQ(stateWords("unstarted"), "not started");
    EXPECT_EQ(stateWords("suspended"), "suspended");
    EXPECT_EQ(stateWords("pending"), "pending");
}

}  // namespace
}  // namespace pytstates
