/* SPDX-License-Identifier: MIT */
/* Each device's forensics record, made at its first use. */
#include "forensics.h"

#include <stdlib.h>

struct cmt_device_forensics *cmt_forensics_device_new(struct cmt_forensics *f, int32_t device)
{
    if (device < 0 || device >= CMT_MAX_DEVICES)
        return NULL;
    struct cmt_device_forensics *d = f->devices[device];
    if (!d) {
        d = calloc(1, sizeof *d);
        if (!d)
            return NULL;
        d->seen = true;
        cmt_addr_index_init(&d->index);
        d->point_series.cap = CMT_SERIES_MAX;
        d->sample_series.cap = CMT_SERIES_MAX;
        f->devices[device] = d;
    }
    return d;
}
