/* SPDX-License-Identifier: MIT */
/* Bounded series (struct cmt_series, forensics.h): the points kept over a
 * run of any length, at half the resolution each time they fill up. */
#include "forensics.h"

#include <string.h>

void *cmt_series_next(struct cmt_series *s, void *points, size_t elem)
{
    if (!s->stride)
        s->stride = 1;
    if (s->offered++ % s->stride)
        return NULL;
    if (s->n == s->cap) {
        /* Keep every other point: half the resolution, the same span. */
        char *p = points;
        for (size_t i = 0; i < s->n / 2; i++)
            memcpy(p + i * elem, p + (2 * i) * elem, elem);
        s->n /= 2;
        s->stride *= 2;
    }
    return (char *)points + s->n++ * elem;
}

void *cmt_series_push(struct cmt_series *s, void *points, size_t elem, bool *halved)
{
    *halved = false;
    if (s->n == s->cap) {
        char *p = points;
        for (size_t i = 0; i < s->n / 2; i++)
            memcpy(p + i * elem, p + (2 * i) * elem, elem);
        s->n /= 2;
        *halved = true;
    }
    return (char *)points + s->n++ * elem;
}
