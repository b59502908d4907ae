/* SPDX-License-Identifier: MIT */
#include "time_arg.h"

#include <ctype.h>
#include <string.h>

int cmt_parse_time_arg(const char *text, uint64_t *ns)
{
    const char *p = text;
    if (!p || !isdigit((unsigned char)*p))
        return -1;
    uint64_t whole = 0;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10)
            return -1;
        whole = whole * 10 + d;
    }
    /* The fraction as nanoseconds of the unit: at most 9 digits matter. */
    uint64_t frac = 0, scale = 1000000000ull;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        for (; isdigit((unsigned char)*p); p++) {
            if (scale > 1) {
                scale /= 10;
                frac += (uint64_t)(*p - '0') * scale;
            }
        }
    }
    uint64_t unit;
    if (!*p || !strcmp(p, "s"))
        unit = 1000000000ull;
    else if (!strcmp(p, "ms"))
        unit = 1000000ull;
    else if (!strcmp(p, "us"))
        unit = 1000ull;
    else if (!strcmp(p, "ns"))
        unit = 1;
    else
        return -1;
    if (whole > UINT64_MAX / unit)
        return -1;
    uint64_t v = whole * unit;
    /* frac is in 1e-9 of the unit */
    uint64_t part = (uint64_t)((unsigned __int128)frac * unit / 1000000000ull);
    if (v > UINT64_MAX - part)
        return -1;
    *ns = v + part;
    return 0;
}
