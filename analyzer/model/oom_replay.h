/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_OOM_REPLAY_H
#define CUMEMTRACE_ANALYZER_OOM_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor_pass.h"
#include "whatif_report.h"

struct cmt_report;

/* What the replay says about a failure of PyTorch's cache (its own OOM
 * record, the block layer: verdicts R11 and R12). The report replays the
 * `whatif --compare` candidates on the recorded device (whatif_report.h);
 * this turns that device's rows into facts about one failure: which
 * settings would have served it, with the reserve they would have reached,
 * and for a capacity verdict how much smaller the tensors' peak must be and
 * which category of tensors (tensors_report.h) holds most of it. The
 * forensics, the tensors' section, their JSON and HTML and `check` all say
 * it from here (docs/fragmentation.md, "What to try"). */

enum cmt_replay_outcome {
    CMT_REPLAY_NO_FAILURE,   /* served every request: this one too */
    CMT_REPLAY_FAILS_HERE,   /* its first failure is this request */
    CMT_REPLAY_FAILS_BEFORE, /* ran out earlier, on a request the recorded run served */
    CMT_REPLAY_FAILS_LATER,  /* served this one, ran out on a later request */
};

struct cmt_oom_replayed {
    const struct cmt_whatif_row *row; /* label, peaks, first failure */
    enum cmt_replay_outcome outcome;
};

#define CMT_OOM_REPLAY_MAX 16

struct cmt_oom_replay {
    bool on;           /* the candidates were replayed on this failure's device */
    bool reproduced;   /* the recorded settings' replay fails on this request, as the run did */
    uint64_t capacity; /* the device replayed on (0: its size unknown) */
    uint64_t failure_ts; /* absolute: PyTorch's OOM record, where the replay asks the request */
    struct cmt_oom_replayed settings[CMT_OOM_REPLAY_MAX]; /* [0]: the recorded settings */
    size_t n;
    size_t best;       /* into settings: no failure with the least reserve; SIZE_MAX: none */
    size_t serving;    /* settings that serve this request (no failure, or a later one) */
    /* capacity: bytes the tensors' peak must shrink by for the recorded
     * settings to serve the request (the replay's short_by; 0: not known) */
    uint64_t short_by;
    /* The category holding most of the tensors at the device's tensor peak
     * (the cache's reserve and what is outside the cache left out). */
    bool has_category;
    enum cmt_tensor_category category;
    uint64_t category_bytes, category_total, category_stack; /* stack: canonical, 0 none */
    const char *category_name, *category_key;
    const char *category_advice; /* the tensors' advice on it for this device, NULL: none */
};

/* The replay's facts about PyTorch's failure on `device` recorded at
 * failure_ts (absolute). out->on false when the report replayed nothing on
 * that device, or when the recorded settings' replay failed on an earlier
 * failure of the run (each setting's first failure is all the replay
 * keeps: a later one is not said). */
void cmt_oom_replay_of(struct cmt_oom_replay *out, const struct cmt_report *r, int32_t device, uint64_t failure_ts);

/* "replayed on the recorded device (79.2 GiB for PyTorch's cache), the usual
 * settings: the recorded settings fail here as the run did;
 * expandable_segments:True and max_split_size_mb:128 would have served it,
 * roundup_power2_divisions:4 (capacity) would not" */
void cmt_oom_replay_found(const struct cmt_oom_replay *p, char *buf, size_t len);

/* What to try, from the replay. Fragmentation: the setting that serves it
 * with the least reserve, "replayed: no failure, reserved peak 77.9 GiB",
 * and the others that serve it; capacity: how much smaller the peak must be
 * and which category holds it. Returns false (buf untouched) when the
 * replay does not reproduce the failure: the caller's own words stand. */
bool cmt_oom_replay_remedy(const struct cmt_oom_replay *p, bool capacity, char *buf, size_t len);

/* The block layer's failures' sentences (blocks_report.h), said again with
 * the replay's facts once the report has them. */
void cmt_oom_replay_sentences(struct cmt_report *r);

#endif
