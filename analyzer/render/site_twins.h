/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SITE_TWINS_H
#define CUMEMTRACE_ANALYZER_SITE_TWINS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* Two rows of one list named by the same site frame (the same function and
 * line, reached through different callers, or a stack cut short) read as
 * one site listed twice. Under row i of a list, says where its stack parts
 * from the first other row of the list with the same site frame, or nothing
 * when there is none. The list: n rows of stride bytes, each holding its
 * (canonical) stack id as a uint64_t at stack_offset. */
void cmt_print_twin_note(const struct cmt_report *r, FILE *out, const void *rows, size_t stride, size_t stack_offset,
                         size_t n, size_t i, const char *indent);

#define CMT_PRINT_TWIN_NOTE(r, out, rows, n, i, indent)                                                  \
    cmt_print_twin_note((r), (out), (rows), sizeof *(rows), offsetof(__typeof__(*(rows)), stack), (n), (i), \
                        (indent))

#endif
