// SPDX-License-Identifier: Apache-2.0
// What the CLI's stdout is: a terminal's width and whether it shows colour. Header-only, the
// CLI's alone (gdb and lldb say their own width).
#pragma once

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace pytstates {

// COLUMNS when set (as `COLUMNS=80 pytstates ...` asks, and as Python's shutil and less read
// it), else the terminal's own width (TIOCGWINSZ) when stdout is one; 0: no terminal, unwrapped.
inline int terminalWidth() {
    if (const char* columns = std::getenv("COLUMNS")) {
        char* end = nullptr;
        long n = std::strtol(columns, &end, 10);
        if (end != columns && *end == '\0' && n > 0 && n < 100000) return static_cast<int>(n);
    }
    struct winsize ws {};
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 0;
}

// --color auto|always|never; auto: stdout is a terminal and NO_COLOR (no-color.org) is unset or
// empty. The value was checked by the option's parser.
inline bool useColor(const std::string& when) {
    if (when == "always") return true;
    if (when == "never") return false;
    const char* noColor = std::getenv("NO_COLOR");
    return isatty(STDOUT_FILENO) && (!noColor || !*noColor);
}

}  // namespace pytstates
