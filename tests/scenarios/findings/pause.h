// SPDX-License-Identifier: Apache-2.0
/* The pause every scenario sits in after READY: it blocks on stdin without the GIL, answers
 * "ping" with "pong" (so a test can see the process still runs after pytstates detached) and
 * ends the process with status 0 on "quit" or end of input. */
#ifndef PYTSTATES_SCENARIO_PAUSE_H
#define PYTSTATES_SCENARIO_PAUSE_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void pause_until_quit(void) {
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "ping", 4) == 0) {
            fputs("pong\n", stdout);
            fflush(stdout);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    fflush(stdout);
    _exit(0);
}

#endif
