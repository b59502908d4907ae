/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ALLOC_VIEWS_H
#define CUMEMTRACE_ANALYZER_ALLOC_VIEWS_H

#include "holder_pass.h"
#include "replay.h"
#include "site_calls.h"
#include "thread_use.h"

/* The views that follow every allocation and release on their own (calls
 * and short-lived allocations per call site, device memory per thread,
 * each holder's own peak), followed by one observer of the replay: one
 * call per change and one test of its kind and class, where an observer
 * each cost a call, its register saves and the same tests three times
 * (callgrind: about 45 instructions per event). Each view is still an
 * observer of its own for whoever follows one alone (their .observer). */
struct cmt_alloc_views {
    struct cmt_site_calls *site_calls; /* NULL: not followed */
    struct cmt_thread_use *thread_use; /* NULL: not followed */
    struct cmt_holder_pass *holders;   /* NULL: not followed */
    /* Another observer's on_change, called after the views' for every
     * change (cmt_alloc_views_then); NULL: none. */
    int (*then)(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live);
    void *then_ctx;
    struct cmt_replay_observer observer;
};

/* Sets up the observer over the views given (any may be NULL); the views
 * must outlive the replay. Attach v->observer. */
void cmt_alloc_views_init(struct cmt_alloc_views *v, struct cmt_site_calls *site_calls,
                          struct cmt_thread_use *thread_use, struct cmt_holder_pass *holders);

/* Calls o's on_change after the views' own work for every change (the
 * forensics' fragmentation tracker: one call per change instead of two).
 * o must be attached to r already, and v->observer too; from then on the
 * replay calls o's on_change only through v (cmt_replay_hand_over_changes). */
void cmt_alloc_views_then(struct cmt_alloc_views *v, struct cmt_replay *r, const struct cmt_replay_observer *o);

/* The views' work for one change (on_change without `then`), inline for
 * a caller that follows them with more in the same call (frag.c), which
 * may know already what the views test: holds (cmt_kind_holds_memory),
 * device_kind (cmt_class_of_kind is CMT_CLASS_DEVICE), and all (every
 * view is followed: no test of each). Memory (site_calls), device-resident
 * memory (thread_use, holders); during an event (site_calls, thread_use). */
static inline __attribute__((always_inline)) int cmt_alloc_views_change_known(struct cmt_alloc_views *v,
                                                                              const struct cmt_replay *r,
                                                                              const struct cmt_live *l, bool live,
                                                                              bool holds, bool device_kind,
                                                                              const bool all)
{
    struct cmt_site_calls *site_calls = v->site_calls;
    struct cmt_thread_use *thread_use = v->thread_use;
    struct cmt_holder_pass *holders = v->holders;
    if (all && (!site_calls || !thread_use || !holders))
        __builtin_unreachable();
    if (!holds)
        return 0;
    /* the replay's devices are -1 .. CMT_MAX_DEVICES - 1 */
    bool device = (uint32_t)l->device < CMT_MAX_DEVICES && device_kind;
    if (device && holders)
        cmt_holder_pass_device_change(holders, r, l, live);
    if (!r->event)
        return 0;
    if (site_calls && cmt_site_calls_memory_change(site_calls, r, l, live) != 0)
        return -1;
    if (device && thread_use && cmt_thread_use_device_change(thread_use, r, l, live) != 0)
        return -1;
    return 0;
}

static inline __attribute__((always_inline)) int cmt_alloc_views_change(struct cmt_alloc_views *v,
                                                                        const struct cmt_replay *r,
                                                                        const struct cmt_live *l, bool live)
{
    return cmt_alloc_views_change_known(v, r, l, live, cmt_kind_holds_memory(l->kind),
                                        cmt_class_of_kind(l->kind) == CMT_CLASS_DEVICE, false);
}

#endif
