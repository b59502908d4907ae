/* SPDX-License-Identifier: MIT */
#include "site_floors.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"

struct site_pick {
    uint32_t stack;
    uint64_t top; /* its highest floor */
};

static int by_top(const void *pa, const void *pb)
{
    const struct site_pick *a = pa, *b = pb;
    if (a->top != b->top)
        return a->top > b->top ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* The device of a site's home account, -1 for host or none. */
static int64_t home_device(const struct cmt_site_stats *st)
{
    uint8_t home = st->home & (uint8_t)~CMT_SITE_HOME_DIRTY;
    return home ? (int64_t)((home - 1) / CMT_CLASS_COUNT) - 1 : -1;
}

int cmt_site_floors_build(struct cmt_site_floors *f, struct cmt_report *r, const struct cmt_analysis *a)
{
    memset(f, 0, sizeof *f);
    const struct cmt_replay *rp = &a->replay;
    uint32_t n = rp->growth.n;
    if (!n)
        return 0;
    struct site_pick *picks = calloc(rp->n_active ? rp->n_active : 1, sizeof *picks);
    /* per device and holder (PyTorch, cuBLAS, ..., the rest), the sum of
     * every site's floor: held throughout each interval by that holder */
    const size_t rows = (size_t)(CMT_MAX_DEVICES + 1) * CMT_HOLDER_COUNT;
    f->holder_floors = calloc(rows * n, sizeof *f->holder_floors);
    if (!picks || !f->holder_floors)
        goto fail;
    size_t k = 0;
    for (size_t i = 0; i < rp->n_active; i++) {
        uint32_t id = rp->active_sites[i];
        const uint64_t *s = rp->site_extra[id].samples;
        if (!s)
            continue;
        uint64_t top = 0;
        for (uint32_t c = 0; c < n; c++)
            top = s[c] > top ? s[c] : top;
        if (top)
            picks[k++] = (struct site_pick){id, top};
    }
    size_t used = 0;
    for (size_t i = 0; i < k; i++) {
        int64_t device = home_device(&rp->sites[picks[i].stack]);
        if (device < -1 || device >= CMT_MAX_DEVICES)
            continue;
        enum cmt_holder hd = cmt_report_holder(r, picks[i].stack);
        uint64_t *row = &f->holder_floors[((size_t)(device + 1) * CMT_HOLDER_COUNT + hd) * n];
        const uint64_t *s = rp->site_extra[picks[i].stack].samples;
        for (uint32_t c = 0; c < n; c++)
            row[c] += s[c];
    }
    for (size_t row = 0; row < rows; row++) {
        const uint64_t *v = &f->holder_floors[row * n];
        for (uint32_t c = 0; c < n; c++)
            if (v[c]) {
                used++;
                break;
            }
    }
    qsort(picks, k, sizeof *picks, by_top);
    if (k > CMT_FLOOR_MAX_SITES)
        k = CMT_FLOOR_MAX_SITES;
    f->by_holder = calloc(used ? used : 1, sizeof *f->by_holder);
    f->sites = calloc(k ? k : 1, sizeof *f->sites);
    if (!f->by_holder || !f->sites)
        goto fail;
    for (size_t row = 0; row < rows; row++) {
        const uint64_t *v = &f->holder_floors[row * n];
        bool any = false;
        for (uint32_t c = 0; c < n && !any; c++)
            any = v[c] != 0;
        if (any)
            f->by_holder[f->n_by_holder++] = (struct cmt_floor_holder_row){
                .device = (int32_t)(row / CMT_HOLDER_COUNT) - 1,
                .holder_key = cmt_holder_key((enum cmt_holder)(row % CMT_HOLDER_COUNT)),
                .floor = v,
            };
    }
    for (size_t i = 0; i < k; i++) {
        const struct cmt_site_stats *st = &rp->sites[picks[i].stack];
        f->sites[i] = (struct cmt_floor_site){
            .stack = picks[i].stack,
            .device = (int32_t)home_device(st),
            .kind = cmt_timeline_kind_name(st->kind),
            .floor = rp->site_extra[picks[i].stack].samples,
        };
    }
    f->n_sites = k;
    f->n = n;
    f->started = rp->growth.started;
    f->origin_ts = rp->growth.origin;
    f->interval_ns = 1ull << rp->growth.shift;
    free(picks);
    return 0;
fail:
    free(picks);
    cmt_site_floors_free(f);
    return -1;
}

void cmt_site_floors_free(struct cmt_site_floors *f)
{
    free(f->holder_floors);
    free(f->by_holder);
    free(f->sites);
    memset(f, 0, sizeof *f);
}
