/* SPDX-License-Identifier: MIT */
#include "size_parse.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct unit {
    const char *name;
    uint64_t factor;
    int case_sensitive; /* decimal units keep their case: "MB" vs "Mb" would be bits */
};

static const struct unit units[] = {
    {"", 1, 0},         {"b", 1, 0},
    {"k", 1ull << 10, 0}, {"kib", 1ull << 10, 0}, {"kB", 1000ull, 1},
    {"m", 1ull << 20, 0}, {"mib", 1ull << 20, 0}, {"MB", 1000000ull, 1},
    {"g", 1ull << 30, 0}, {"gib", 1ull << 30, 0}, {"GB", 1000000000ull, 1},
    {"t", 1ull << 40, 0}, {"tib", 1ull << 40, 0}, {"TB", 1000000000000ull, 1},
};

static int unit_factor(const char *u, size_t len, uint64_t *factor)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        const struct unit *k = &units[i];
        if (strlen(k->name) != len)
            continue;
        int eq = k->case_sensitive ? strncmp(k->name, u, len) == 0 : strncasecmp(k->name, u, len) == 0;
        if (eq) {
            *factor = k->factor;
            return 0;
        }
    }
    return -1;
}

int cmt_parse_size(const char *text, uint64_t *out)
{
    if (!text)
        return -1;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    /* Integer part exactly, fraction separately, so "1.5GiB" needs no floats
     * for the integer bytes and large integers keep full precision. */
    uint64_t whole = 0;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10)
            return -1;
        whole = whole * 10 + d;
        p++;
    }
    uint64_t frac_num = 0, frac_den = 1;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p)) {
            if (frac_den < 1000000000ull) {
                frac_num = frac_num * 10 + (uint64_t)(*p - '0');
                frac_den *= 10;
            }
            p++;
        }
    }
    while (isspace((unsigned char)*p))
        p++;
    const char *u = p;
    while (isalpha((unsigned char)*p))
        p++;
    size_t ulen = (size_t)(p - u);
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '\0')
        return -1;
    uint64_t factor;
    if (unit_factor(u, ulen, &factor) != 0)
        return -1;
    if (whole != 0 && factor > UINT64_MAX / whole)
        return -1;
    uint64_t value = whole * factor;
    if (frac_num) {
        /* factor * frac_num / frac_den without overflow for factors up to 2^40
         * and frac_den up to 1e9: split the factor. */
        uint64_t part = (factor / frac_den) * frac_num + ((factor % frac_den) * frac_num) / frac_den;
        if (value > UINT64_MAX - part)
            return -1;
        value += part;
    }
    *out = value;
    return 0;
}

void cmt_format_size(uint64_t bytes, char *buf, unsigned long buflen)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, buflen, "%llu B", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes;
    unsigned i = 0;
    while (v >= 1024.0 && i < 5) {
        v /= 1024.0;
        i++;
    }
    snprintf(buf, buflen, "%.1f %s", v, names[i]);
}
