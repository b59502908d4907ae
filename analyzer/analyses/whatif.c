/* SPDX-License-Identifier: MIT */
/* The what-if engine (whatif.h): per device one model of the allocator per
 * setting, the recorded run's requests and releases fed to each, the room
 * on the device kept up to date, the first failure of each kept with where
 * it happened. */
#include "whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmt_whatif_init(struct cmt_whatif *w, const struct cmt_ta_settings *asked, size_t n_asked, uint64_t capacity)
{
    memset(w, 0, sizeof *w);
    if (n_asked > CMT_WHATIF_MAX_SETTINGS - 1)
        n_asked = CMT_WHATIF_MAX_SETTINGS - 1;
    memcpy(w->asked, asked, n_asked * sizeof *asked);
    w->n_asked = n_asked;
    w->capacity = capacity;
    w->burst_device = -1;
    cmt_ta_settings_default(&w->settings[0]);
    cmt_tensor_slots_init(&w->slots);
    return cmt_tensor_slots_spare(&w->slots, &w->oom_slot) == 0 ? 0 : -1;
}

void cmt_whatif_free(struct cmt_whatif *w)
{
    for (size_t i = 0; i < w->n_devices; i++)
        for (size_t k = 0; k < CMT_WHATIF_MAX_SETTINGS; k++)
            cmt_ta_free_allocator(w->devices[i].model[k]);
    cmt_tensor_slots_free(&w->slots);
    memset(w, 0, sizeof *w);
}

void cmt_whatif_set_recorded(struct cmt_whatif *w, const char *text, const char *variable, bool known)
{
    w->recorded_known = known;
    w->recorded_variable = variable;
    snprintf(w->recorded_text, sizeof w->recorded_text, "%s", text ? text : "");
    if (cmt_ta_settings_parse(w->recorded_text, &w->settings[0], w->recorded_error, sizeof w->recorded_error) != 0) {
        /* a setting the model does not take (backend:cudaMallocAsync, a
         * key of a newer PyTorch): replayed with the defaults, and said */
        w->recorded_unparsed = true;
        cmt_ta_settings_default(&w->settings[0]);
        snprintf(w->settings[0].text, sizeof w->settings[0].text, "%s", w->recorded_text);
    }
}

void cmt_whatif_infer_expandable(struct cmt_whatif *w, bool expandable)
{
    if (w->recorded_known || w->n_devices)
        return;
    w->recorded_inferred = true;
    cmt_ta_settings_parse(expandable ? "expandable_segments:True" : "", &w->settings[0], w->recorded_error,
                          sizeof w->recorded_error);
}

static bool same_settings(const struct cmt_ta_settings *a, const struct cmt_ta_settings *b)
{
    return a->max_split_size == b->max_split_size &&
           a->max_non_split_rounding_size == b->max_non_split_rounding_size &&
           a->large_segment_size == b->large_segment_size &&
           a->garbage_collection_threshold == b->garbage_collection_threshold &&
           !memcmp(a->roundup_power2_divisions, b->roundup_power2_divisions, sizeof a->roundup_power2_divisions) &&
           a->expandable_segments == b->expandable_segments && a->fraction_set == b->fraction_set &&
           (!a->fraction_set || a->memory_fraction == b->memory_fraction);
}

/* The settings list is fixed at the first device: the recorded one, then
 * the ones asked, each replayed once. */
static void settle_settings(struct cmt_whatif *w)
{
    if (w->n_settings)
        return;
    for (size_t i = 0; i < w->n_asked; i++)
        w->settings[i + 1] = w->asked[i];
    w->n_settings = w->n_asked + 1;
    for (size_t i = 0; i < w->n_settings; i++) {
        w->same[i] = i;
        for (size_t k = 0; k < i; k++)
            if (same_settings(&w->settings[i], &w->settings[k])) {
                w->same[i] = k;
                break;
            }
    }
}

struct cmt_whatif_device *cmt_whatif_device(struct cmt_whatif *w, int32_t ordinal, uint64_t total)
{
    for (size_t i = 0; i < w->n_devices; i++)
        if (w->devices[i].ordinal == ordinal)
            return &w->devices[i];
    if (w->n_devices == CMT_WHATIF_MAX_DEVICES) {
        w->devices_dropped++;
        return NULL;
    }
    settle_settings(w);
    struct cmt_whatif_device *d = &w->devices[w->n_devices];
    memset(d, 0, sizeof *d);
    d->ordinal = ordinal;
    d->total = total;
    d->capacity = w->capacity ? w->capacity : total;
    d->min_limit = d->limit = UINT64_MAX;
    d->digest = 0xcbf29ce484222325ull;
    /* PyTorch sizes expandable segments' address ranges by the device */
    uint64_t sizing = d->capacity ? d->capacity : 80ull << 30;
    for (size_t i = 0; i < w->n_settings; i++) {
        d->run[i].min_headroom = UINT64_MAX;
        if (w->same[i] != i)
            continue;
        d->model[i] = cmt_ta_new(&w->settings[i], sizing);
        if (!d->model[i]) {
            for (size_t k = 0; k < i; k++)
                cmt_ta_free_allocator(d->model[k]);
            w->out_of_memory = true;
            return NULL;
        }
        const struct cmt_ta_settings *s = &w->settings[i];
        if (s->fraction_set && d->capacity)
            cmt_ta_set_allowed(d->model[i], (uint64_t)(s->memory_fraction * (double)d->capacity));
        d->run[i].stats = cmt_ta_stats(d->model[i]);
    }
    w->n_devices++;
    return d;
}

void cmt_whatif_update_limit(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t ts)
{
    uint64_t others = d->driver_live > d->recorded_reserved ? d->driver_live - d->recorded_reserved : 0;
    uint64_t outside = others + d->context;
    if (others > d->others_max)
        d->others_max = others;
    if (outside > d->outside_max)
        d->outside_max = outside;
    uint64_t limit = UINT64_MAX;
    if (d->capacity)
        limit = d->capacity > outside ? d->capacity - outside : 0;
    if (limit < d->min_limit)
        d->min_limit = limit;
    d->limit = limit;
    for (size_t i = 0; i < w->n_settings; i++)
        if (d->model[i]) {
            cmt_ta_set_limit(d->model[i], limit);
            cmt_ta_set_clock(d->model[i], ts);
        }
}

static void note_failure(struct cmt_whatif *w, struct cmt_whatif_device *d, size_t i, const struct cmt_ta_failure *f,
                         uint64_t ts, uint32_t tid, uint64_t stack, uint64_t stream, bool recorded_failed)
{
    struct cmt_whatif_run *run = &d->run[i];
    if (run->failures++)
        return;
    run->has_failure = true;
    run->peak_reserved_at_failure = run->stats->peak_reserved;
    run->peak_allocated_at_failure = run->stats->peak_allocated;
    run->first = (struct cmt_whatif_failure){.ts = ts, .tid = tid, .stack = stack, .stream = stream,
                                             .recorded_failed = recorded_failed, .f = *f};
    if (w->phases)
        run->first.has_where = cmt_phases_where_now(w->phases, tid, &run->first.where);
}

static void digest(struct cmt_whatif_device *d, uint64_t tag, uint64_t a, uint64_t b)
{
    const uint64_t words[3] = {tag, a, b};
    for (size_t i = 0; i < 3; i++)
        for (unsigned k = 0; k < 64; k += 8)
            d->digest = (d->digest ^ ((words[i] >> k) & 0xff)) * 0x100000001b3ull;
}

static void note_stream(struct cmt_whatif_device *d, uint64_t stream)
{
    for (size_t i = 0; i < d->n_streams; i++)
        if (d->streams[i] == stream)
            return;
    if (d->n_streams < sizeof d->streams / sizeof d->streams[0])
        d->streams[d->n_streams++] = stream;
}

/* The least room left after a request: how close the setting came. */
static void note_headroom(struct cmt_whatif_device *d, size_t i, uint64_t ts)
{
    struct cmt_whatif_run *run = &d->run[i];
    uint64_t reserved = run->stats->reserved, allowed = cmt_ta_allowed(d->model[i]);
    uint64_t limit = d->limit < allowed ? d->limit : allowed;
    uint64_t room = limit == UINT64_MAX ? UINT64_MAX : limit > reserved ? limit - reserved : 0;
    if (room < run->min_headroom) {
        run->min_headroom = room;
        run->min_headroom_ts = ts;
    }
}

int cmt_whatif_request(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t key, uint64_t size,
                       uint64_t stream, uint64_t pool0, uint64_t pool1, uint64_t ts, uint32_t tid, uint64_t stack,
                       bool recorded_failed)
{
    uint32_t slot = w->oom_slot;
    note_stream(d, stream);
    if (recorded_failed) {
        d->recorded_ooms++;
        digest(d, 'O', size, stream);
    } else {
        d->requests++;
        uint32_t old;
        if (cmt_tensor_slots_find(&w->slots, d->ordinal, key, &old)) {
            /* its release went unrecorded: the old tensor is gone */
            cmt_whatif_release(w, d, key, ts);
            cmt_whatif_complete(w, d, key, ts);
        }
        if (cmt_tensor_slots_add(&w->slots, d->ordinal, key, &slot) != 0) {
            w->out_of_memory = true;
            return -1;
        }
        digest(d, 'A', size, stream);
    }
    for (size_t i = 0; i < w->n_settings; i++) {
        struct cmt_ta_allocator *m = d->model[i];
        if (!m)
            continue;
        struct cmt_ta_failure f;
        int rc = cmt_ta_malloc(m, slot, size, stream, pool0, pool1, &f);
        if (rc < 0) {
            w->out_of_memory = true;
            return -1;
        }
        if (rc > 0) {
            note_failure(w, d, i, &f, ts, tid, stack, stream, recorded_failed);
            continue;
        }
        note_headroom(d, i, ts);
        if (recorded_failed) { /* served here: its life is not in the trace, so it ends now */
            d->run[i].served_recorded_failures++;
            cmt_ta_free_requested(m, slot);
            cmt_ta_free_completed(m, slot);
        }
    }
    return 0;
}

void cmt_whatif_release(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t key, uint64_t ts)
{
    (void)ts;
    uint32_t slot;
    if (!cmt_tensor_slots_find(&w->slots, d->ordinal, key, &slot))
        return;
    d->releases++;
    digest(d, 'R', slot, 0);
    for (size_t i = 0; i < w->n_settings; i++)
        if (d->model[i])
            cmt_ta_free_requested(d->model[i], slot);
}

void cmt_whatif_complete(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t key, uint64_t ts)
{
    (void)ts;
    uint32_t slot;
    if (!cmt_tensor_slots_find(&w->slots, d->ordinal, key, &slot))
        return;
    digest(d, 'C', slot, 0);
    for (size_t i = 0; i < w->n_settings; i++)
        if (d->model[i])
            cmt_ta_free_completed(d->model[i], slot);
    if (cmt_tensor_slots_remove(&w->slots, d->ordinal, key) != 0)
        w->out_of_memory = true;
}

void cmt_whatif_empty_cache(struct cmt_whatif *w, uint64_t ts)
{
    w->empty_caches_inferred++;
    for (size_t k = 0; k < w->n_devices; k++) {
        struct cmt_whatif_device *d = &w->devices[k];
        for (size_t i = 0; i < w->n_settings; i++)
            if (d->model[i]) {
                cmt_ta_set_clock(d->model[i], ts);
                cmt_ta_empty_cache(d->model[i]);
            }
    }
}

void cmt_whatif_set_allowed(struct cmt_whatif *w, struct cmt_whatif_device *d, uint64_t allowed)
{
    d->allowed = allowed;
    d->fraction_inferred = true;
    for (size_t i = 0; i < w->n_settings; i++)
        if (d->model[i] && !w->settings[i].fraction_set)
            cmt_ta_set_allowed(d->model[i], allowed);
}
