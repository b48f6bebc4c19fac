# SPDX-License-Identifier: Apache-2.0
"""Debian unstable's python3.14 / python3.15 (scripts/debian-python) as a program a debugger starts.

The interpreter needs its own glibc (2.38 or newer). Run as `ld.so python3.1X`, gdb 13 takes ld.so
for the program and never sees python3.1X (nor its symbols: `break main` stays pending). So a copy
of the executable is made whose PT_INTERP names the unpacked root's ld.so, through a short symlink
(the string is rewritten in place: no byte of code, no address and not the build-id changes). The
debugger then starts it as any user's `gdb --args python3.14 ...` does, with LD_LIBRARY_PATH on the
root's libraries and not through the host's shell (which that LD_LIBRARY_PATH would break: gdb's
`set startup-with-shell off`, lldb's `process launch -X false`).
"""
import os
import shutil
import struct
import subprocess
import tempfile

PT_INTERP = 3


def unpacked_root(source_dir, series, cache_dir):
    """The root scripts/debian-python unpacks (fetched once into cache_dir); raises RuntimeError
    with its one line when the suite cannot be had."""
    out = subprocess.run([os.path.join(source_dir, "scripts", "debian-python"), series, cache_dir],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if out.returncode != 0:
        raise RuntimeError("CPython %s from Debian's unstable suite is not available: %s"
                           % (series, out.stderr.decode(errors="replace").strip()))
    return out.stdout.decode().strip().splitlines()[-1]


def set_interpreter(path, interpreter):
    """Rewrites the PT_INTERP string of the ELF file `path` in place (the new one must fit)."""
    with open(path, "r+b") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            raise RuntimeError("%s is not a 64-bit ELF file" % path)
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            p_type, _, p_offset, _, _, p_filesz = struct.unpack("<IIQQQQ", f.read(40))
            if p_type != PT_INTERP:
                continue
            new = interpreter.encode()
            if len(new) + 1 > p_filesz:
                raise RuntimeError("%s does not fit in %s's PT_INTERP (%d bytes)" % (interpreter, path, p_filesz))
            f.seek(p_offset)
            f.write(new + b"\0" * (p_filesz - len(new)))
            return
    raise RuntimeError("%s has no PT_INTERP" % path)


class SidPython:
    """A startable copy of the root's python<series>: the executable, the inferior's environment,
    and the debugger settings it needs (gdb_init: gdb's -iex commands, lldb_init: lldb's -O ones,
    run before the debugger loads the program). with_debug_files: the debugger's debug-file
    directory (and so pytstates') is the root's /usr/lib/debug (python3.1X-dbg installed); else
    only the stripped executable is there."""

    def __init__(self, root, series, with_debug_files):
        self.root = root
        self.series = series
        # In /tmp itself: the symlink's path must be shorter than "/lib64/ld-linux-x86-64.so.2".
        self.work = tempfile.mkdtemp(prefix="pyts", dir="/tmp")
        loader = os.path.join(self.work, "ld")
        os.symlink(os.path.join(root, "lib64", "ld-linux-x86-64.so.2"), loader)
        self.executable = os.path.join(self.work, "python" + series)
        shutil.copy2(os.path.join(root, "usr", "bin", "python" + series), self.executable)
        set_interpreter(self.executable, loader)
        self.environment = ["PYTHONHOME=" + os.path.join(root, "usr"),
                            "LD_LIBRARY_PATH=" + os.path.join(root, "lib", "x86_64-linux-gnu")]
        debug = os.path.join(root, "usr", "lib", "debug") if with_debug_files else os.path.join(self.work, "no-debug")
        self.gdb_init = ["set startup-with-shell off", "set debug-file-directory " + debug]
        self.lldb_init = ["settings set target.debug-file-search-paths " + debug]
        # Without the debug file the executable's symbols are its dynamic ones: no main.
        self.stop_at = "main" if with_debug_files else "Py_BytesMain"

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)
