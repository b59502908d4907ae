/* SPDX-License-Identifier: MIT */
/* Reads cases from stdin, one a line: FORMAT FIRST_LINE OFFSET EXPECTED
 * TABLE_HEX, and checks the shim's line-table reader (preload/python_lines.c)
 * against each; prints the first mismatches and how many cases were checked.
 * test_python.py's line_tables case makes the cases from the running
 * interpreter's own code objects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python_lines.h"

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; s[0] && s[1] && n < cap; s += 2) {
        unsigned v;
        if (sscanf(s, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
    }
    return n;
}

int main(void)
{
    static char line[1 << 20];
    static uint8_t table[1 << 19];
    unsigned long checked = 0, wrong = 0;
    while (fgets(line, sizeof line, stdin)) {
        unsigned format;
        int first, offset;
        unsigned expected;
        int used = 0;
        if (sscanf(line, "%u %d %d %u %n", &format, &first, &offset, &expected, &used) != 4)
            continue;
        char *hex = line + used;
        hex[strcspn(hex, "\n")] = '\0';
        size_t len = unhex(hex, table, sizeof table);
        uint32_t got = cmt_python_line(format, table, len, first, offset);
        checked++;
        if (got != expected && wrong++ < 10)
            printf("format %u first %d offset %d: expected line %u, got %u\n", format, first, offset, expected, got);
    }
    printf("%lu checked, %lu wrong\n", checked, wrong);
    return wrong != 0;
}
