# SPDX-License-Identifier: Apache-2.0
"""Python files by their whole paths in the text, cut at the front to the text's width (the CLI's
--width, gdb's width, lldb's term-width): a thread of Debian's python3 waits in a file copied into
a deep directory (tests/findings/long_paths_program.py); its frame's line, unwrapped, is wider
than 80 columns. on_terminal runs a debugger on a pseudo-terminal of a given width, as a user's."""
import contextlib
import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import tempfile
import termios
import time

import scenario
from findings_cases import expect

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "findings", "long_paths_program.py")
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@contextlib.contextmanager
def deep_program():
    """with deep_program() as (proc, facts): the program running from a deep directory, at READY;
    facts: its file (co_filename), the line its thread waits at, that thread's LWP."""
    work = tempfile.mkdtemp(prefix="pytstates-")
    try:
        deep = os.path.join(work, "a_project_with_a_rather_long_name", "src", "a_package_with_a_long_name", "sub")
        os.makedirs(deep)
        program = os.path.join(deep, os.path.basename(PROGRAM))
        shutil.copy(PROGRAM, program)
        with scenario.running([scenario.PYTHON, program], workdir=work) as (proc, facts):
            expect(facts["file"] == program, "the program names its file %s (copied to %s)" % (facts["file"], program))
            yield proc, facts
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tail_that_fits(path, room):
    """The rule: "…/" (2 columns) and as many of the path's last components as fit the room; the
    file name always."""
    parts = path.split("/")
    tail = parts[-1]
    for part in reversed(parts[1:-1]):
        if 2 + len(part + "/" + tail) > room:
            break
        tail = part + "/" + tail
    return tail


def check_frame(text, facts, width, who):
    """text: a report (tstates or check, without --locals). width None: unwrapped, the frame names
    the file whole; else every line fits the width and the frame's path is cut to its room.
    Returns the frame's line."""
    end = ":%d)" % facts["line"]
    # "        #2 park_in_a_deep_file (": under threading's two frames of Event.wait
    heads = [m.group(0) for m in re.finditer(r"^ +#\d+ park_in_a_deep_file \(", text, re.M)]
    expect(len(heads) == 1, "%s: one frame of park_in_a_deep_file:\n%s" % (who, text))
    head = heads[0]
    whole = head + facts["file"] + end
    expect(len(whole) > 80, "%s: the frame's line is %d columns unwrapped" % (who, len(whole)))
    lines = text.splitlines()
    if width is None:
        expect(whole in lines, "%s: unwrapped, the frame names the file whole:\n%s" % (who, text))
        return whole
    wide = [l for l in lines if len(l) > width]  # str: "…" counts one, as on a terminal
    expect(not wide, "%s: at %d columns every line fits: %s" % (who, width, wide))
    want = head + "\u2026/" + tail_that_fits(facts["file"], width - len(head) - len(end)) + end
    frame = [l for l in lines if l.startswith(head)]
    expect(frame == [want], "%s: at %d columns the path keeps its tail: %s (want %s)" % (who, width, frame, want))
    expect(re.search(r"/sub/long_paths_program\.py:%d\)$" % facts["line"], want) is not None and facts["file"] not in text,
           "%s: the file name and its directory kept, the front cut" % who)
    return want


def on_terminal(argv, columns, timeout=120):
    """argv run on a pseudo-terminal `columns` wide (stdin, stdout and stderr): its output, with
    "\\r\\n" as "\\n" and colour and cursor escapes left out."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True, start_new_session=True)
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the terminal's last writer is gone
                    break
                if not data:
                    break
                out += data
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    return ESCAPES.sub("", out.decode(errors="replace").replace("\r\n", "\n"))
