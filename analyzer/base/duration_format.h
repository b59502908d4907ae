/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_DURATION_FORMAT_H
#define CUMEMTRACE_ANALYZER_DURATION_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* A time or a duration in ns, in the unit its magnitude calls for: "0 s",
 * "850 ns", "65.5 us", "23.6 ms", "1.536 s". Every section of every output
 * writes times with it, so one run reads the same everywhere. */
void cmt_format_duration(uint64_t ns, char *buf, size_t len);

#endif
