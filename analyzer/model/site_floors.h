/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SITE_FLOORS_H
#define CUMEMTRACE_ANALYZER_SITE_FLOORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The call sites' floors per growth checkpoint interval (replay.h): the
 * lowest bytes each site held during an interval, so what it held
 * throughout; computed when the model is built (the HTML report's). */
struct cmt_floor_holder_row {
    int32_t device;         /* -1: host */
    const char *holder_key; /* cmt_holder_key: "pytorch", ..., "other" */
    const uint64_t *floor;  /* [n]: every site's floor of that device and holder, summed */
};

struct cmt_floor_site {
    uint32_t stack;
    int32_t device;        /* of its home account (the first it counted in); -1: host or none */
    const char *kind;      /* name of the kind of its first allocation */
    const uint64_t *floor; /* [n] */
};

struct cmt_site_floors {
    uint32_t n;          /* intervals; 0: none (the model has no floors) */
    bool started;        /* the checkpoints started */
    uint64_t origin_ts;  /* absolute start of the first interval, when started */
    uint64_t interval_ns;
    struct cmt_floor_holder_row *by_holder; /* rows with some floor, by device then holder */
    size_t n_by_holder;
    uint64_t *holder_floors;                /* what by_holder points into */
    struct cmt_floor_site *sites;           /* the largest CMT_FLOOR_MAX_SITES by highest floor, largest first */
    size_t n_sites;
};

/* Call sites whose floors the model carries, the largest first. */
#define CMT_FLOOR_MAX_SITES 400

struct cmt_report;
struct cmt_analysis;
/* Returns 0, or -1 when out of memory (floors then empty). */
int cmt_site_floors_build(struct cmt_site_floors *f, struct cmt_report *r, const struct cmt_analysis *a);
void cmt_site_floors_free(struct cmt_site_floors *f);

#endif
