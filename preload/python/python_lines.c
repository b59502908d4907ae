/* SPDX-License-Identifier: MIT */
#include "python_lines.h"

#include <stdbool.h>

#include "python_runtime.h"

/* The location table of 3.11 and later (Objects/locations.md in CPython):
 * entries of one first byte (bit 7 set, code in bits 3-6, length - 1 in bits
 * 0-2, in code units) and the bytes the code says follow. */
struct table_reader {
    const uint8_t *p, *end;
};

__attribute__((no_sanitize("address"))) static unsigned read_varint(struct table_reader *r)
{
    unsigned v = 0, shift = 0;
    while (r->p < r->end && shift < 32) {
        uint8_t b = *r->p++;
        v |= (unsigned)(b & 63) << shift;
        if (!(b & 64))
            break;
        shift += 6;
    }
    return v;
}

static int read_svarint(struct table_reader *r)
{
    unsigned v = read_varint(r);
    return (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
}

/* The line of instruction offset (code units), or 0 when the table gives it
 * none. */
__attribute__((no_sanitize("address"))) static uint32_t line_of_311(const uint8_t *table, size_t len, int first,
                                                               int offset)
{
    struct table_reader r = {table, table + len};
    int line = first, addr = 0;
    while (r.p < r.end) {
        uint8_t b = *r.p++;
        if (!(b & 0x80))
            return 0;
        int code = (b >> 3) & 15, units = (b & 7) + 1;
        bool none = false;
        if (code == 15) {
            none = true;
        } else if (code == 14) {
            line += read_svarint(&r);
            read_varint(&r), read_varint(&r), read_varint(&r);
        } else if (code == 13) {
            line += read_svarint(&r);
        } else if (code >= 10) {
            line += code - 10;
            r.p += 2;
        } else {
            r.p += 1;
        }
        if (offset < addr + units)
            return none || line < 0 ? 0 : (uint32_t)line;
        addr += units;
    }
    return 0;
}

/* 3.10's co_linetable: (address delta in bytes, signed line delta) pairs,
 * -128 meaning no line for that range (PEP 626). */
__attribute__((no_sanitize("address"))) static uint32_t line_of_310(const uint8_t *table, size_t len, int first,
                                                                   int byte_offset)
{
    int line = first, end = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        int start = end;
        end += table[i];
        int delta = (int8_t)table[i + 1];
        int here = -1;
        if (delta != -128)
            here = line += delta;
        if (byte_offset >= start && byte_offset < end)
            return here < 0 ? 0 : (uint32_t)here;
    }
    return 0;
}

/* 3.9's co_lnotab: (address increment, signed line increment) pairs, each
 * line increment applying from its address on. */
__attribute__((no_sanitize("address"))) static uint32_t line_of_39(const uint8_t *table, size_t len, int first,
                                                                  int byte_offset)
{
    int line = first, addr = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        addr += table[i];
        if (addr > byte_offset)
            break;
        line += (int8_t)table[i + 1];
    }
    return line < 0 ? 0 : (uint32_t)line;
}

uint32_t cmt_python_line(unsigned format, const uint8_t *table, size_t len, int first_line, int offset)
{
    if (format == CMT_PY_LINES_LINETABLE)
        return line_of_310(table, len, first_line, 2 * offset);
    if (format == CMT_PY_LINES_LNOTAB)
        return line_of_39(table, len, first_line, 2 * offset);
    return line_of_311(table, len, first_line, offset);
}
