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
    return positionFromLocationTable(table, firstLine, offset).line;
}

LinePosition positionFromLocationTable(const std::vector<uint8_t>& table, int firstLine, int offset) {
    Cursor c{table, 0};
    int64_t computed = firstLine, addr = 0;  // 64 bits: a corrupt table must not overflow
    auto fits = [](int64_t v) { return v >= 0 && v <= INT32_MAX; };
    while (c.ok()) {
        uint8_t first = c.next();
        if (!(first & 0x80)) return {};  // not an entry start: corrupt table
        int code = (first >> 3) & 15;
        int length = ((first & 7) + 1) * 2;  // code units -> bytes
        int delta = 0;
        bool noLine = false;
        int64_t endDelta = 0, column = -1, endColumn = -1;
        if (code == 15) {
            noLine = true;
        } else if (code == 14) {  // long form: line delta, end line delta, column + 1, end column + 1
            delta = c.svarint();
            endDelta = c.varint();
            column = static_cast<int64_t>(c.varint()) - 1;
            endColumn = static_cast<int64_t>(c.varint()) - 1;
        } else if (code == 13) {  // no column info
            delta = c.svarint();
        } else if (code >= 10) {  // one-line forms: delta 0..2, then the column and the end column
            delta = code - 10;
            column = c.next();
            endColumn = c.next();
        } else {  // short forms: same line; the column's high bits are the code, one byte for the rest
            unsigned second = c.next();
            column = code * 8 + ((second >> 4) & 7);
            endColumn = column + (second & 15);
        }
        computed += delta;
        if (addr <= offset && offset < addr + length) {
            if (noLine || !fits(computed)) return {};
            LinePosition p;
            p.line = static_cast<int>(computed);
            if (fits(computed + endDelta)) p.endLine = static_cast<int>(computed + endDelta);
            if (fits(column) && fits(endColumn)) {
                p.column = static_cast<int>(column);
                p.endColumn = static_cast<int>(endColumn);
            }
            return p;
        }
        addr += length;
    }
    return {};
}

}  // namespace pytstates
