/* SPDX-License-Identifier: MIT */
#include "units.h"

#include <inttypes.h>
#include <stdio.h>

#include "size_parse.h"

const char *cmt_size_str(uint64_t bytes, char *buf, size_t len)
{
    cmt_format_size(bytes, buf, len);
    return buf;
}

const char *cmt_size_exact_str(uint64_t bytes, char *buf, size_t len)
{
    char h[32];
    cmt_format_size(bytes, h, sizeof h);
    if (bytes < 1024)
        snprintf(buf, len, "%s", h);
    else
        snprintf(buf, len, "%s (%" PRIu64 " B)", h, bytes);
    return buf;
}

const char *cmt_plural(uint64_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

void cmt_format_duration(uint64_t ns, char *buf, size_t len)
{
    if (ns == 0)
        snprintf(buf, len, "0 s");
    else if (ns >= 1000000000ull)
        snprintf(buf, len, "%.3f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, len, "%.1f us", (double)ns / 1e3);
    else
        snprintf(buf, len, "%" PRIu64 " ns", ns);
}

const char *cmt_duration_str(uint64_t ns, char *buf, size_t len)
{
    cmt_format_duration(ns, buf, len);
    return buf;
}
