/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_UNITS_H
#define CUMEMTRACE_ANALYZER_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Sizes, counts and durations as every output words them: written once
 * here (common/size_parse.h has the byte-size formatter the shim shares). */

/* "64.0 MiB", "512 B" (cmt_format_size); returns buf. */
const char *cmt_size_str(uint64_t bytes, char *buf, size_t len);
/* "64.0 MiB (67108864 B)", or "512 B" below 1 KiB: a figure a reader may
 * compare with a limit to the byte; returns buf. */
const char *cmt_size_exact_str(uint64_t bytes, char *buf, size_t len);
/* one when n is 1, else many: "1 allocation", "2 allocations". */
const char *cmt_plural(uint64_t n, const char *one, const char *many);
/* "1.234 s" / "12.5 ms" / "80.0 us" / "512 ns" / "0 s". */
void cmt_format_duration(uint64_t ns, char *buf, size_t len);
/* The same, returning buf. */
const char *cmt_duration_str(uint64_t ns, char *buf, size_t len);
/* cmt_duration_str into a buffer of the enclosing block (a compound
 * literal), so several fit in one printf: every time any output writes goes
 * through it or cmt_format_duration, so one run reads the same everywhere. */
#define CMT_DURATION(ns) cmt_duration_str((ns), (char[32]){""}, 32)

#endif
