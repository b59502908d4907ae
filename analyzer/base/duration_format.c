/* SPDX-License-Identifier: MIT */
#include "duration_format.h"

#include <inttypes.h>
#include <stdio.h>

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
