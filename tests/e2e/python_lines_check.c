/* SPDX-License-Identifier: MIT */
/* Checks the shim's line-table reader (preload/python/python_lines.c) against cases
 * read from stdin: a line "T HEX" sets the table, each following line
 * "FORMAT FIRST_LINE OFFSET EXPECTED" is a case on it. Prints the first
 * mismatches and how many cases were checked. test_python.py's line_tables
 * case makes the cases from the running interpreter's own code objects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python_lines.h"

static int nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; n < cap && nibble(s[0]) >= 0 && nibble(s[1]) >= 0; s += 2)
        out[n++] = (uint8_t)(nibble(s[0]) << 4 | nibble(s[1]));
    return n;
}

int main(void)
{
    static char line[1 << 20];
    static uint8_t table[1 << 19];
    size_t len = 0;
    unsigned long checked = 0, wrong = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'T') {
            len = unhex(line + 2, table, sizeof table);
            continue;
        }
        unsigned format, expected;
        int first, offset;
        if (sscanf(line, "%u %d %d %u", &format, &first, &offset, &expected) != 4)
            continue;
        uint32_t got = cmt_python_line(format, table, len, first, offset);
        checked++;
        if (got != expected && wrong++ < 10)
            printf("format %u first %d offset %d: expected line %u, got %u\n", format, first, offset, expected, got);
    }
    printf("%lu checked, %lu wrong\n", checked, wrong);
    return wrong != 0;
}
