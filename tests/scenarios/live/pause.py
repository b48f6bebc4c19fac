# SPDX-License-Identifier: Apache-2.0
"""The pause Python scenarios sit in after READY (like pause.h for the C ones): answers "ping"
on stdin with "pong" and returns on "quit" or end of input."""
import sys


def pause_until_quit():
    for line in sys.stdin:
        if line.startswith("ping"):
            print("pong", flush=True)
        elif line.startswith("quit"):
            break
