# SPDX-License-Identifier: Apache-2.0
"""An x86_64 ELF core read in plain Python, as a debugger would hand it to pytstates' Python API
(pytstates/core.py: run(command, args, read_memory, threads, auxv, ...)): memory from the PT_LOAD
segments, threads from NT_PRSTATUS (registers in DWARF order, fs_base), the auxiliary vector
from NT_AUXV, the fatal signal from NT_SIGINFO. Python >= 3.6 (run under every pyenv Python)."""
import bisect
import struct

NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV, NT_FILE = 1, 3, 0x53494749, 6, 0x46494c45
# struct user_regs_struct's words in DWARF order (System V psABI): rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip
_WORD_OF_DWARF = (10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16)
_ORIG_RAX, _FS_BASE = 15, 21


class Core(object):
    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        d = self.data
        if d[:4] != b"\x7fELF" or d[4] != 2 or struct.unpack_from("<H", d, 18)[0] != 62:
            raise ValueError("%s: not an x86_64 ELF core" % path)
        phoff, = struct.unpack_from("<Q", d, 32)
        phentsize, phnum = struct.unpack_from("<HH", d, 54)
        self.segments = []  # (vaddr, offset, filesz)
        self.threads, self.auxv, self.siginfo, self.files, self.pid = [], {}, None, [], 0
        for i in range(phnum):
            p_type, _flags, offset, vaddr, _paddr, filesz, _memsz = struct.unpack_from("<IIQQQQQ", d, phoff + i * phentsize)
            if p_type == 1 and filesz:
                self.segments.append((vaddr, offset, filesz))
            elif p_type == 4:
                self._notes(offset, filesz)
        self.segments.sort()
        self._starts = [s[0] for s in self.segments]

    def _notes(self, offset, size):
        d, end = self.data, offset + size
        while offset + 12 <= end:
            namesz, descsz, kind = struct.unpack_from("<III", d, offset)
            desc = offset + 12 + ((namesz + 3) & ~3)
            if kind == NT_PRSTATUS:
                lwp, = struct.unpack_from("<i", d, desc + 32)
                words = struct.unpack_from("<27Q", d, desc + 112)
                registers = [words[w] for w in _WORD_OF_DWARF]
                syscall = words[_ORIG_RAX] if words[_ORIG_RAX] < (1 << 63) else -1
                self.threads.append((lwp, words[_FS_BASE], registers, syscall))
            elif kind == NT_PRPSINFO:
                self.pid, = struct.unpack_from("<i", d, desc + 24)
            elif kind == NT_AUXV:
                for at in range(desc, desc + descsz - 15, 16):
                    key, value = struct.unpack_from("<QQ", d, at)
                    if key == 0:
                        break
                    self.auxv[key] = value
            elif kind == NT_SIGINFO and self.siginfo is None:
                signo, _errno, code = struct.unpack_from("<iii", d, desc)
                address, = struct.unpack_from("<Q", d, desc + 16)
                pid, uid = struct.unpack_from("<iI", d, desc + 16)
                self.siginfo = (signo, code, address, pid, uid)
            elif kind == NT_FILE:
                count, page = struct.unpack_from("<QQ", d, desc)
                names = d[desc + 16 + 24 * count:desc + descsz].split(b"\0")
                for j in range(count):
                    start, stop, page_offset = struct.unpack_from("<QQQ", d, desc + 16 + 24 * j)
                    self.files.append((start, stop, names[j].decode("utf-8", "surrogateescape"), page_offset * page))
            offset = desc + ((descsz + 3) & ~3)

    def read(self, address, length):
        """Bytes at address from the segment holding it (up to its end); a page the core left
        out (a clean file page) from the file mapped there (NT_FILE), as gdb reads it; None
        when neither has it."""
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0:
            vaddr, offset, filesz = self.segments[i]
            if address < vaddr + filesz:
                n = min(length, vaddr + filesz - address)
                return self.data[offset + address - vaddr:offset + address - vaddr + n]
        for start, stop, name, file_offset in self.files:
            if start <= address < stop:
                try:
                    with open(name, "rb") as f:
                        f.seek(file_offset + address - start)
                        return f.read(min(length, stop - address)) or None
                except OSError:
                    return None
        return None

    def crash(self):
        if self.siginfo is None or not self.threads:
            return None
        signo, code, address, pid, uid = self.siginfo
        return (self.threads[0][0], signo, code, address, pid, uid)

    def executable(self):
        """The file mapped at the entry point (NT_FILE), as the kernel and gdb name it."""
        entry = self.auxv.get(9, 0)
        for start, stop, name, _offset in self.files:
            if start <= entry < stop:
                return name
        return ""

    def numbers(self):
        """gdb's and lldb's numbers of a core's threads: the order of its notes."""
        return dict((t[0], i + 1) for i, t in enumerate(self.threads))


def run(core_module, core_path, command, args):
    """core_module.run on the core at core_path: (status, output, error)."""
    c = Core(core_path)
    return core_module.run(command, args, c.read, c.threads, c.auxv, c.executable(), c.pid, False, False, c.numbers(), "", c.crash(), [])
