// SPDX-License-Identifier: Apache-2.0
#include "symbols/cpython/line_table.h"

namespace pytstates {

int lineFromLnotab(const std::vector<uint8_t>& table, int firstLine, int offset) {
    int line = firstLine, addr = 0;
    for (size_t i = 0; i + 1 < table.size(); i += 2) {
        addr += table[i];
        if (addr > offset) break;
        line += static_cast<int8_t>(table[i + 1]);
    }
    return line;
}

int lineFromLinetable310(const std::vector<uint8_t>& table, int firstLine, int offset) {
    int start = 0, end = 0, computed = firstLine, line = -1;
    for (size_t i = 0; i + 1 < table.size(); i += 2) {
        start = end;
        end += table[i];
        int delta = static_cast<int8_t>(table[i + 1]);
        if (delta == -128) {
            line = -1;
        } else {
            computed += delta;
            line = computed;
        }
        if (start <= offset && offset < end) return line;
    }
    return -1;
}

namespace {

struct Cursor {
    const std::vector<uint8_t>& t;
    size_t pos;
    bool ok() const { return pos < t.size(); }
    uint8_t next() { return pos < t.size() ? t[pos++] : 0; }
    unsigned varint() {
        unsigned read = next(), value = read & 63, shift = 0;
        while ((read & 64) && ok() && shift < 28) {
            read = next();
            shift += 6;
            value |= (read & 63) << shift;
        }
        return value;
    }
    int svarint() {
        unsigned v = varint();
        return (v & 1) ? -static_cast<int>(v >> 1) : static_cast<int>(v >> 1);
    }
};

}  // namespace

int lineFromLocationTable(const std::vector<uint8_t>& table, int firstLine, int offset) {
    Cursor c{table, 0};
    int64_t computed = firstLine, addr = 0;  // 64 bits: a corrupt table must not overflow
    while (c.ok()) {
        uint8_t first = c.next();
        if (!(first & 0x80)) return -1;  // not an entry start: corrupt table
        int code = (first >> 3) & 15;
        int length = ((first & 7) + 1) * 2;  // code units -> bytes
        int delta = 0;
        bool noLine = false;
        if (code == 15) {
            noLine = true;
        } else if (code == 14) {  // long form: line delta, end line delta, column, end column
            delta = c.svarint();
            c.varint();
            c.varint();
            c.varint();
        } else if (code == 13) {  // no column info
            delta = c.svarint();
        } else if (code >= 10) {  // one-line forms: delta 0..2, then two column bytes
            delta = code - 10;
            c.next();
            c.next();
        } else {  // short forms: same line, one column byte
            c.next();
        }
        computed += delta;
        if (addr <= offset && offset < addr + length)
            return noLine || computed < 0 || computed > INT32_MAX ? -1 : static_cast<int>(computed);
        addr += length;
    }
    return -1;
}

}  // namespace pytstates
