/* SPDX-License-Identifier: MIT */
#include "oom_replay.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "blocks_report.h"
#include "report.h"
#include "tensors_report.h"
#include "size_parse.h"
#include "units.h"

static const struct cmt_whatif_device_view *device_view(const struct cmt_report *r, int32_t device)
{
    const struct cmt_whatif_report *w = r->whatif;
    if (!w || strcmp(w->source, "blocks") != 0)
        return NULL;
    for (size_t i = 0; i < w->n_devices; i++)
        if (w->devices[i].ordinal == device && w->devices[i].n_rows)
            return &w->devices[i];
    return NULL;
}

static enum cmt_replay_outcome outcome_of(const struct cmt_whatif_row *row, uint64_t start, uint64_t failure_ts)
{
    if (row->fits)
        return CMT_REPLAY_NO_FAILURE;
    uint64_t at = start + row->first.time_ns;
    if (at == failure_ts)
        return CMT_REPLAY_FAILS_HERE;
    return at < failure_ts ? CMT_REPLAY_FAILS_BEFORE : CMT_REPLAY_FAILS_LATER;
}

/* The tensors' category holding most at the device's tensor peak. */
static void category_of(struct cmt_oom_replay *p, const struct cmt_report *r, int32_t device)
{
    const struct cmt_tensors_report *t = r->tensors;
    const struct cmt_tensor_instant *pk = t && t->on ? cmt_tensors_peak(t, device) : NULL;
    if (!pk || !pk->seen)
        return;
    uint64_t total = 0, best = 0;
    enum cmt_tensor_category cat = CMT_CAT_COUNT;
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++) {
        total += pk->cats.bytes[c];
        /* the reserve is no tensor: what shrinks the peak is the tensors */
        if (c != CMT_CAT_RESERVE && pk->cats.bytes[c] > best) {
            best = pk->cats.bytes[c];
            cat = (enum cmt_tensor_category)c;
        }
    }
    if (cat == CMT_CAT_COUNT)
        return;
    p->has_category = true;
    p->category = cat;
    p->category_bytes = best;
    p->category_total = total;
    p->category_name = t->category_name[cat];
    p->category_key = t->category_key[cat];
    for (size_t i = 0; i < t->n_devices; i++)
        if (t->devices[i].ordinal == device)
            p->category_stack = t->devices[i].top_stack[cat];
    for (size_t i = 0; i < t->n_advice; i++)
        if (t->advice[i].device == device && t->advice[i].category == cat) {
            p->category_advice = t->advice[i].text;
            break;
        }
}

void cmt_oom_replay_of(struct cmt_oom_replay *out, const struct cmt_report *r, int32_t device, uint64_t failure_ts)
{
    memset(out, 0, sizeof *out);
    out->best = SIZE_MAX;
    const struct cmt_whatif_device_view *d = device_view(r, device);
    if (!d)
        return;
    /* The replay keeps each setting's first failure only: a later failure
     * of the recorded run (a program that caught the first) is not said. */
    const struct cmt_whatif_row *rec0 = &d->rows[0];
    if (!rec0->fits && rec0->first.recorded_failed && r->trace.start_ns + rec0->first.time_ns < failure_ts)
        return;
    out->on = true;
    out->capacity = d->min_room != UINT64_MAX ? d->min_room : 0;
    out->failure_ts = failure_ts;
    uint64_t start = r->trace.start_ns;
    for (size_t i = 0; i < d->n_rows && out->n < CMT_OOM_REPLAY_MAX; i++) {
        struct cmt_oom_replayed *s = &out->settings[out->n++];
        s->row = &d->rows[i];
        s->outcome = outcome_of(s->row, start, failure_ts);
        if (s->outcome == CMT_REPLAY_NO_FAILURE || s->outcome == CMT_REPLAY_FAILS_LATER)
            out->serving++;
        if (s->outcome == CMT_REPLAY_NO_FAILURE &&
            (out->best == SIZE_MAX || s->row->peak_reserved < out->settings[out->best].row->peak_reserved))
            out->best = out->n - 1;
    }
    const struct cmt_whatif_row *rec = out->settings[0].row;
    out->reproduced = out->settings[0].outcome == CMT_REPLAY_FAILS_HERE && rec->first.recorded_failed;
    if (out->reproduced && !strcmp(rec->first.verdict, "capacity"))
        out->short_by = rec->first.short_by;
    category_of(out, r, device);
}

/* --- words ---------------------------------------------------------------------- */

struct words {
    char *buf;
    size_t len, at;
};

static void put(struct words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct words *w, const char *fmt, ...)
{
    if (w->at >= w->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->buf + w->at, w->len - w->at, fmt, ap);
    va_end(ap);
    if (n > 0)
        w->at = w->at + (size_t)n < w->len ? w->at + (size_t)n : w->len;
}

/* "a, b and c" over the settings (the recorded one left out) whose outcome
 * is in mask; with_verdict adds each one's first failure's verdict. */
static size_t list_settings(struct words *w, const struct cmt_oom_replay *p, unsigned mask, bool with_verdict,
                            const char **shared)
{
    size_t total = 0, k = 0;
    const char *one = NULL; /* the verdict they all share, else NULL */
    bool same = true;
    for (size_t i = 1; i < p->n; i++)
        if ((mask >> p->settings[i].outcome) & 1u) {
            const char *v = p->settings[i].row->fits ? "" : p->settings[i].row->first.verdict;
            same = same && (!one || !strcmp(one, v));
            one = v;
            total++;
        }
    if (with_verdict && same && total > 1) {
        with_verdict = false;
        one = one && one[0] ? one : NULL;
    } else {
        one = NULL;
    }
    for (size_t i = 1; i < p->n; i++) {
        const struct cmt_oom_replayed *s = &p->settings[i];
        if (!((mask >> s->outcome) & 1u))
            continue;
        put(w, "%s%s", k == 0 ? "" : k + 1 == total ? " and " : ", ", s->row->label);
        if (with_verdict && !s->row->fits)
            put(w, " (%s)", s->row->first.verdict);
        k++;
    }
    if (shared)
        *shared = one;
    return total;
}

#define SERVES ((1u << CMT_REPLAY_NO_FAILURE) | (1u << CMT_REPLAY_FAILS_LATER))
#define FAILS ((1u << CMT_REPLAY_FAILS_HERE) | (1u << CMT_REPLAY_FAILS_BEFORE))

void cmt_oom_replay_found(const struct cmt_oom_replay *p, char *buf, size_t len)
{
    struct words w = {buf, len, 0};
    buf[0] = '\0';
    if (!p->on)
        return;
    char room[32];
    put(&w, "replayed (the recorded tensor requests through PyTorch's allocator on the recorded device, ");
    if (p->capacity)
        put(&w, "room for its cache %s at the tightest", cmt_size_str(p->capacity, room, sizeof room));
    else
        put(&w, "its size unknown");
    put(&w, "): ");
    const struct cmt_oom_replayed *rec = &p->settings[0];
    if (p->reproduced)
        put(&w, "the recorded settings (%s) fail here as the run did", rec->row->label);
    else if (rec->outcome == CMT_REPLAY_NO_FAILURE || rec->outcome == CMT_REPLAY_FAILS_LATER)
        put(&w, "the recorded settings (%s) serve this request in the replay, which does not reproduce the failure: "
                "what other settings would do is not said",
            rec->row->label);
    else
        put(&w, "the recorded settings (%s) run out before this request in the replay, which does not reproduce "
                "the run: what other settings would do is not said",
            rec->row->label);
    if (p->n < 2 || !p->reproduced)
        return;
    size_t serving = 0, failing = 0;
    for (size_t i = 1; i < p->n; i++) {
        serving += (SERVES >> p->settings[i].outcome) & 1u;
        failing += (FAILS >> p->settings[i].outcome) & 1u;
    }
    if (serving) {
        put(&w, "; ");
        list_settings(&w, p, SERVES, false, NULL);
        put(&w, " would have served it");
    }
    if (failing) {
        put(&w, serving ? ", " : "; ");
        const char *shared = NULL;
        list_settings(&w, p, FAILS, true, &shared);
        put(&w, " would not");
        if (shared)
            put(&w, " (%s, each)", shared);
    }
}

/* "replayed: no failure, reserved peak 77.9 GiB (83592478720 B), +8.0 MiB
 * against the recorded run" */
static void served_fact(struct words *w, const struct cmt_whatif_row *row)
{
    char a[64], b[32];
    if (row->fits)
        put(w, "replayed: no failure, reserved peak %s", cmt_size_exact_str(row->peak_reserved, a, sizeof a));
    else
        put(w, "replayed: serves this request, runs out later (%s, at %s), reserved peak %s then",
            row->first.verdict, CMT_DURATION(row->first.time_ns), cmt_size_exact_str(row->peak_reserved, a, sizeof a));
    if (row->vs_recorded)
        put(w, ", %s%s against the recorded run", row->vs_recorded > 0 ? "+" : "-",
            cmt_size_str(row->vs_recorded > 0 ? (uint64_t)row->vs_recorded : (uint64_t)-row->vs_recorded, b,
                         sizeof b));
    else
        put(w, ", as much as the recorded run");
}

/* What shrinks each category, in a few words. */
static const char *category_lever(enum cmt_tensor_category c)
{
    switch (c) {
    case CMT_CAT_PARAMETERS:
        return "weights in bfloat16, or FSDP to shard them across GPUs";
    case CMT_CAT_GRADIENTS:
        return "optimizer.zero_grad(set_to_none=True) before the forward pass, or gradients sharded with FSDP";
    case CMT_CAT_OPTIMIZER_STATE:
        return "an 8-bit optimizer, or ZeroRedundancyOptimizer or FSDP to shard it";
    case CMT_CAT_ACTIVATIONS:
        return "activation checkpointing (torch.utils.checkpoint), mixed precision or a smaller batch";
    case CMT_CAT_TEMPORARIES:
        return "smaller batches or tiles, or operations in place: temporaries grow with what one operation handles";
    case CMT_CAT_CUBLAS:
    case CMT_CAT_CUDNN:
        return "a smaller workspace (CUBLAS_WORKSPACE_CONFIG, torch.backends.cudnn.benchmark=False)";
    case CMT_CAT_NCCL:
        return "smaller communication buffers (NCCL_BUFFSIZE)";
    default:
        return "release the tensors kept across steps or made outside them once used";
    }
}

static void category_words(struct words *w, const struct cmt_oom_replay *p, const char *lead)
{
    if (!p->has_category)
        return;
    double share = p->category_total ? 100.0 * (double)p->category_bytes / (double)p->category_total : 0;
    char b[32];
    cmt_format_size(p->category_bytes, b, sizeof b);
    put(w, "%s%s hold most of it: %s at the tensors' peak, %.0f%% of the device memory then: %s", lead,
        p->category_name, b, share, category_lever(p->category));
    if (p->category_advice)
        put(w, " (PyTorch's tensors' advice on them has the figures)");
}

bool cmt_oom_replay_remedy(const struct cmt_oom_replay *p, bool capacity, char *buf, size_t len)
{
    if (!p->on || !p->reproduced)
        return false;
    struct words w = {buf, len, 0};
    buf[0] = '\0';
    char a[64];
    if (capacity) {
        /* a setting that serves it anyway makes the shrinking the recorded settings' need */
        const char *under = p->best != SIZE_MAX || p->serving ? " under the recorded settings" : "";
        if (p->short_by)
            put(&w, "the tensors' peak must be %s smaller for this request to fit%s",
                cmt_size_exact_str(p->short_by, a, sizeof a), under);
        else
            put(&w, "the tensors' peak must be smaller for this request to fit%s", under);
        category_words(&w, p, "; ");
        if (p->best != SIZE_MAX) {
            put(&w, "; %s serves it with the data as it is (", p->settings[p->best].row->label);
            served_fact(&w, p->settings[p->best].row);
            put(&w, ")");
        } else if (p->serving) {
            put(&w, "; of the allocator's settings only ");
            list_settings(&w, p, 1u << CMT_REPLAY_FAILS_LATER, false, NULL);
            put(&w, " get past this request, and run out later");
        } else {
            put(&w, "; no allocator setting serves it (all %zu replayed run out): release or reuse what the call "
                    "sites hold before this point, use smaller batches, or a GPU with more memory",
                p->n);
        }
        return true;
    }
    if (p->best != SIZE_MAX) {
        const struct cmt_whatif_row *b = p->settings[p->best].row;
        if (b->text[0])
            put(&w, "set PYTORCH_CUDA_ALLOC_CONF=%s (", b->text);
        else
            put(&w, "leave PYTORCH_CUDA_ALLOC_CONF unset, the defaults (");
        served_fact(&w, b);
        put(&w, ")");
        size_t others = 0, k = 0;
        for (size_t i = 1; i < p->n; i++)
            others += i != p->best && ((SERVES >> p->settings[i].outcome) & 1u);
        for (size_t i = 1; i < p->n; i++)
            if (i != p->best && ((SERVES >> p->settings[i].outcome) & 1u)) {
                put(&w, "%s%s (", k == 0 ? "; it also fits under " : k + 1 == others ? " and " : ", ",
                    p->settings[i].row->label);
                served_fact(&w, p->settings[i].row);
                put(&w, ")");
                k++;
            }
        return true;
    }
    if (p->serving) {
        put(&w, "no usual setting serves the whole run; ");
        list_settings(&w, p, 1u << CMT_REPLAY_FAILS_LATER, false, NULL);
        put(&w, " get past this request and run out later (`cumemtrace whatif --compare` says where): allocate "
                "the large, long-lived tensors first, or call torch.cuda.empty_cache() before the large request");
        return true;
    }
    put(&w, "none of the %zu usual settings serves it (replayed): allocate the large, long-lived tensors first and "
            "free the large short-lived ones before asking for more, or call torch.cuda.empty_cache() before the "
            "large request",
        p->n);
    return true;
}

/* The block layer's sentence's tail: "replayed: expandable_segments:True
 * would have served it (no failure, reserved peak 77.9 GiB (...)), and
 * max_split_size_mb:128; roundup_power2_divisions:4 would not". */
static void sentence_tail(struct words *w, const struct cmt_oom_replay *p, bool capacity)
{
    char a[64];
    if (capacity && p->short_by) {
        put(w, "replayed: the tensors' peak must be %s smaller", cmt_size_exact_str(p->short_by, a, sizeof a));
        if (p->has_category)
            put(w, ", %s hold most of it", p->category_name);
        if (p->best == SIZE_MAX)
            put(w, "; no allocator setting serves it");
        return;
    }
    if (p->best == SIZE_MAX) {
        put(w, "replayed: none of the %zu usual settings would have served it", p->n);
        return;
    }
    const struct cmt_whatif_row *b = p->settings[p->best].row;
    put(w, "replayed: %s would have served it (no failure, reserved peak %s)", b->label,
        cmt_size_exact_str(b->peak_reserved, a, sizeof a));
    size_t others = 0;
    for (size_t i = 1; i < p->n; i++)
        others += i != p->best && ((SERVES >> p->settings[i].outcome) & 1u);
    if (others) {
        put(w, ", and %zu other setting%s (", others, others == 1 ? "" : "s");
        size_t k = 0;
        for (size_t i = 1; i < p->n; i++)
            if (i != p->best && ((SERVES >> p->settings[i].outcome) & 1u))
                put(w, "%s%s", k++ ? ", " : "", p->settings[i].row->label);
        put(w, ")");
    }
    size_t failing = 0;
    for (size_t i = 1; i < p->n; i++)
        failing += (FAILS >> p->settings[i].outcome) & 1u;
    if (failing) {
        put(w, "; ");
        const char *shared = NULL;
        list_settings(w, p, FAILS, true, &shared);
        put(w, " would not");
        if (shared)
            put(w, " (%s, each)", shared);
    }
}

void cmt_oom_replay_sentences(struct cmt_report *r)
{
    struct cmt_blocks_report *b = r->blocks;
    for (size_t i = 0; b && i < b->n_devices; i++) {
        struct cmt_blocks_device *d = &b->devices[i];
        for (size_t k = 0; k < d->n_ooms; k++) {
            struct cmt_blocks_oom *o = &d->ooms[k];
            cmt_oom_replay_of(&o->replay, r, d->ordinal, o->at.ts);
            const struct cmt_oom_replay *p = &o->replay;
            if (!p->on || !p->reproduced)
                continue;
            /* the block layer's own "would have served it" gives way to what the replay found */
            char *tail = strstr(o->sentence, "; expandable_segments:True would have served it");
            if (tail)
                *tail = '\0';
            size_t at = strlen(o->sentence);
            struct words w = {o->sentence + at, sizeof o->sentence - at, 0};
            put(&w, "; ");
            sentence_tail(&w, p, o->verdict != CMT_BL_VERDICT_FRAGMENTATION);
        }
    }
}
