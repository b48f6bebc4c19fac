# SPDX-License-Identifier: Apache-2.0
"""Names from the view's JSON made safe for gdb, which prints a frame decorator's strings and a
pretty-printer's to_string() raw: the rule of commands/render/text_encoding.h (control bytes, DEL
and bytes that are not UTF-8 as \\xNN; C1 controls and bidirectional marks as \\uNNNN)."""


def _hidden(cp):
    return (0x80 <= cp <= 0x9F or cp == 0x061C or cp in (0x200E, 0x200F) or 0x202A <= cp <= 0x202E or
            0x2066 <= cp <= 0x2069)


def shown_bytes(data):
    out = []
    for ch in data.decode("utf-8", "surrogateescape"):
        cp = ord(ch)
        if 0xDC80 <= cp <= 0xDCFF:  # a byte that is not UTF-8
            out.append("\\x%02x" % (cp - 0xDC00))
        elif cp < 0x20 or cp == 0x7F:
            out.append("\\x%02x" % cp)
        elif _hidden(cp):
            out.append("\\u%04x" % cp)
        else:
            out.append(ch)
    return "".join(out)


def shown(text):
    """A str: its UTF-8 bytes shown (a lone surrogate is written as the bytes Python would give)."""
    return shown_bytes(text.encode("utf-8", "surrogatepass"))


def shown_field(record, name):
    """record[name] as a terminal may show it: the exact bytes of <name>_bytes (hex) when the
    JSON carries them (a name that is not UTF-8), else the string."""
    raw = record.get(name + "_bytes")
    if isinstance(raw, str):
        try:
            return shown_bytes(bytes.fromhex(raw))
        except ValueError:
            pass
    value = record.get(name)
    return shown(value) if isinstance(value, str) else ""
