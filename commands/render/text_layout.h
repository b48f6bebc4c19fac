// SPDX-License-Identifier: Apache-2.0
// Text for a terminal: paragraphs wrapped to its width, over-long lines folded, a few words in
// colour. Width 0 is no terminal: one logical line per line, as a pipe or a log wants it.
#pragma once

#include <cstddef>
#include <string>

namespace pytstates {

// Columns a line takes: UTF-8 sequences count one, colour escapes (ESC [ ... m) none.
size_t displayWidth(const std::string& line);

// "1 thread", "2 threads": a count and its noun, plural unless it is one.
std::string plural(size_t n, const std::string& noun);

// The words of text on lines of at most width columns, each starting with indent; width 0:
// one line.
std::string wrapText(const std::string& text, size_t width, const std::string& indent);

// Every line wider than width broken at spaces (a word wider than the room, inside it), the
// rest indented 4 past the line's own indent. Width 0: text as it is.
std::string foldLines(const std::string& text, size_t width);

// A file's path in at most `room` columns: whole when it fits or room is 0 (no terminal); else
// "…/" and as many of its last components as fit, so that the file name and its nearest
// directories stay. The file name is never cut: alone, it may be wider than the room.
std::string fitPath(const std::string& path, size_t room);

// before + path + after as one line of at most width columns where the path can be cut to make
// it so (fitPath to the room before and after leave); where no cut can, the path fits the
// continuation line foldLines will open with it; width 0: the path whole.
std::string lineWithPath(const std::string& before, const std::string& path, const std::string& after, size_t width);

enum class Paint { Crash, Hang, Error, Warning };

// word in its colour when color is set (bold red, bold magenta, red, yellow), else word.
std::string paint(const std::string& word, Paint how, bool color);

}  // namespace pytstates
