/* SPDX-License-Identifier: MIT */
/* The block layer as an observer of the replay: BLOCK records (format 2.1)
 * reach it in their place among the driver's events (replay.h, records). */
#include "block_layer.h"
#include "replay.h"

static int on_record(void *ctx, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    (void)r;
    struct cmt_block_layer *bl = ctx;
    if (rec->type != CMT_REC_BLOCK)
        return 0;
    bl->event_tid = rec->tid;
    cmt_block_layer_event(bl, rec->api, rec->device, rec->ts, rec->addr, rec->size, rec->stack, rec->aux);
    return bl->out_of_memory ? -1 : 0;
}

static int on_finish(void *ctx, const struct cmt_replay *r, uint64_t end_ts)
{
    (void)r;
    (void)end_ts;
    struct cmt_block_layer *bl = ctx;
    cmt_block_layer_finish(bl);
    return bl->out_of_memory ? -1 : 0;
}

int cmt_block_layer_attach(struct cmt_block_layer *bl, struct cmt_replay *r)
{
    bl->observer = (struct cmt_replay_observer){.ctx = bl, .on_record = on_record, .on_finish = on_finish};
    return cmt_replay_add_observer(r, &bl->observer);
}
