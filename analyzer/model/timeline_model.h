/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TIMELINE_MODEL_H
#define CUMEMTRACE_ANALYZER_TIMELINE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timeline.h"

/* A timeline as renderers print it: the replay's timeline downsampled once,
 * when the model is built, to at most a number of buckets (each bucket keeps
 * every series' lowest, highest and last live bytes, so no extreme is lost),
 * with each series' facts copied. The renderers read this, never the
 * replay's timeline. */
struct cmt_timeline_model_series {
    int32_t device; /* -1: host */
    uint8_t kind;   /* enum cmt_kind, or CMT_TIMELINE_TOTAL */
    const char *name; /* of the kind: "total", "malloc", ... */
    uint64_t live;    /* at the end */
    uint64_t peak;
    uint64_t peak_ts; /* absolute */
    size_t peak_bucket;
    const struct cmt_timeline_cell *cells; /* [bucket] */
};

struct cmt_timeline_model {
    size_t n;        /* buckets; 0: the timeline is empty */
    uint64_t origin; /* absolute */
    uint64_t width;  /* ns per bucket (UINT64_MAX when wider) */
    uint64_t end;    /* absolute end of the data */
    uint64_t *starts; /* [n + 1]: absolute start of each bucket, then the end of the last (UINT64_MAX past 64-bit time) */
    const struct cmt_timeline_counts *counts; /* [bucket] */
    size_t n_series;
    struct cmt_timeline_model_series *series; /* in timeline order */
    struct cmt_timeline_view view;            /* owns the cells and counts */
};

/* Returns 0, or -1 when out of memory. */
int cmt_timeline_model_build(struct cmt_timeline_model *m, const struct cmt_timeline *t, size_t max_buckets);
void cmt_timeline_model_free(struct cmt_timeline_model *m);
/* Index in m->series of the replay's series s; SIZE_MAX when not there. */
size_t cmt_timeline_model_find(const struct cmt_timeline_model *m, const struct cmt_timeline_series *s);
/* Bucket holding absolute time ts. */
size_t cmt_timeline_model_bucket(const struct cmt_timeline_model *m, uint64_t ts);

#endif
