/* SPDX-License-Identifier: MIT */
#include "holder_peaks.h"

#include <stdlib.h>
#include <string.h>

#include "holder_pass.h"

static enum cmt_holder report_holder(void *ctx, uint64_t stack)
{
    return cmt_report_holder(ctx, stack);
}

/* The reading again: the holder pass as in the analysis's reading, over a
 * replay of its own (the replay's live set says what a release releases,
 * as it did the first time). */
struct again {
    struct cmt_holder_pass *pass;
    struct cmt_replay replay;
    uint64_t stop_ts; /* absolute; 0: to the end */
    bool failed;
};

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    struct again *g = ctx;
    if (g->stop_ts && e->ts > g->stop_ts)
        return 1;
    cmt_holder_pass_read(g->pass, e);
    if (cmt_replay_event(&g->replay, e) != 0) {
        g->failed = true;
        return 1;
    }
    return 0;
}

/* The trace read once more for the holders (the analysis did not follow
 * them, or its classes may not be the final ones): p filled. */
static void read_again(struct cmt_report *r, const struct cmt_analysis *an, struct cmt_holder_pass *p, bool *read)
{
    struct again g = {.pass = p, .stop_ts = an->stop_at_ns ? an->info.start_monotonic_ns + an->stop_at_ns : 0};
    *read = false;
    if (cmt_replay_init(&g.replay) != 0) {
        p->out_of_memory = true;
        return;
    }
    /* the same bound as the analysis's replay: the same stacks read as none */
    g.replay.stack_id_limit = an->replay.stack_id_limit;
    cmt_replay_live_only(&g.replay);
    if (cmt_holder_pass_init(p, report_holder, r, g.replay.stack_id_limit) != 0 ||
        cmt_replay_add_observer(&g.replay, &p->observer) != 0) {
        p->out_of_memory = true;
        cmt_replay_free(&g.replay);
        return;
    }
    struct cmt_reader *reader = NULL;
    char err[CMT_READER_MESSAGE_MAX];
    int rc = an->data ? cmt_reader_open_memory(an->data, an->data_size, &reader, err, sizeof err)
                      : cmt_reader_open(an->path, &reader, err, sizeof err);
    *read = rc == 0;
    if (rc == 0) {
        struct cmt_reader_callbacks cb = {.on_event = on_event};
        /* Damage stops this reading where it stopped the first: what came
         * before still counts. */
        cmt_reader_run(reader, &cb, &g);
        cmt_reader_close(reader);
    }
    if (g.failed || g.replay.out_of_memory)
        p->out_of_memory = true;
    cmt_replay_free(&g.replay);
}

int cmt_holder_peaks_build(struct cmt_report *r, const struct cmt_analysis *an)
{
    const struct cmt_replay *rp = &an->replay;
    bool any = false;
    for (size_t i = 0; i < rp->n_active && !any; i++)
        any = cmt_report_holder(r, rp->active_sites[i]) != CMT_HOLDER_OTHER;
    if (!any)
        return 0;
    const struct cmt_holder_pass *p = cmt_read_passes_holder_peaks(an->passes);
    struct cmt_holder_pass *again = NULL;
    bool read = true;
    if (p) {
        /* the report's frames resolve these stacks in the order the
         * reading met them, as a reading of its own would have */
        size_t n;
        const uint32_t *asked = cmt_read_passes_holder_asked(an->passes, &n);
        for (size_t i = 0; i < n; i++)
            cmt_report_holder(r, asked[i]);
    } else {
        again = calloc(1, sizeof *again);
        if (!again)
            return -1;
        read_again(r, an, again, &read);
        p = again;
    }
    /* A trace that opened the first time and not now (removed meanwhile):
     * no own peaks, said by their absence. */
    for (size_t i = 0; i < r->n_accounts && read && !p->out_of_memory; i++) {
        struct cmt_account_view *v = &r->accounts[i];
        int d = v->account->device;
        if (v->account->cls != CMT_CLASS_DEVICE || d < 0 || d >= CMT_MAX_DEVICES)
            continue;
        v->has_own_peaks = true;
        memcpy(v->own_peak, p->peak[d], sizeof v->own_peak);
    }
    int rc = p->out_of_memory ? -1 : 0;
    if (again) {
        cmt_holder_pass_free(again);
        free(again);
    }
    return rc;
}
