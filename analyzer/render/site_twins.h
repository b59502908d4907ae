/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SITE_TWINS_H
#define CUMEMTRACE_ANALYZER_SITE_TWINS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* Two rows of one list named by the same site frame (the same function and
 * line, reached through different callers, or a stack cut short) read as
 * one site listed twice; under each, a note says where their stacks part.
 *
 * For a list of n rows of stride bytes, each holding its (canonical) stack
 * id as a uint64_t at stack_offset: each row's twin, the first other row
 * whose site frame reads the same and whose stack differs, or SIZE_MAX.
 * NULL when out of memory (the list is then printed without notes); free
 * it. Sorted, not compared pairwise: a list of leaks may hold thousands of
 * rows. */
size_t *cmt_twins_find(const struct cmt_report *r, const void *rows, size_t stride, size_t stack_offset, size_t n);
#define CMT_TWINS_FIND(r, rows, n) \
    cmt_twins_find((r), (rows), sizeof *(rows), offsetof(__typeof__(*(rows)), stack), (n))

/* The note under a row of stack mine whose twin has stack other. */
void cmt_print_twin_note(const struct cmt_report *r, FILE *out, uint64_t mine, uint64_t other, const char *indent);

/* The note under row i of rows, given cmt_twins_find's result (or NULL). */
#define CMT_PRINT_TWIN_NOTE(r, out, twins, rows, i, indent)                                                 \
    do {                                                                                                    \
        if ((twins) && (twins)[i] != SIZE_MAX)                                                              \
            cmt_print_twin_note((r), (out), (rows)[i].stack, (rows)[(twins)[i]].stack, (indent));           \
    } while (0)

#endif
