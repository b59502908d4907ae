/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TIME_ARG_H
#define CUMEMTRACE_ANALYZER_TIME_ARG_H

#include <stdint.h>

/* Parses a time since the start of a trace: a decimal number and an
 * optional unit, "s" (the default), "ms", "us" or "ns": "2", "1.5s",
 * "250ms", "80us", "1500000000ns". Fractions below a nanosecond are
 * dropped. Returns 0, or -1 for anything else (empty, negative, unknown
 * unit, more than about 584 years). */
int cmt_parse_time_arg(const char *text, uint64_t *ns);

#endif
