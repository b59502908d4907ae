/* SPDX-License-Identifier: MIT */
#include "oom_verdict.h"

void cmt_oom_decide(const struct cmt_oom_figures *f, struct cmt_verdict_result *out)
{
    *out = (struct cmt_verdict_result){0};
    if (f->has_sample) {
        out->used = f->total > f->free ? f->total - f->free : 0;
        out->shortfall = f->request > f->free ? f->request - f->free : 0;
        uint64_t explained = f->live + f->pool_slack;
        out->unexplained = out->used > explained ? out->used - explained : 0;
        out->allowance = f->allowance < out->unexplained ? f->allowance : out->unexplained;
        out->others = out->unexplained - out->allowance;
    }
    uint64_t allowance = out->allowance;
    enum cmt_verdict v;
    enum cmt_verdict_rule rule;
    if (f->result != CMT_CUDA_OUT_OF_MEMORY) {
        v = CMT_VERDICT_NOT_OOM, rule = CMT_VRULE_NOT_OOM;
    } else if (f->retried && f->released_after > 0) {
        v = CMT_VERDICT_CACHING, rule = CMT_VRULE_RETRIED_AFTER_RELEASE;
    } else if (!f->has_sample) {
        if (f->span_free >= f->request && f->largest_hole < f->request)
            v = CMT_VERDICT_FRAGMENTATION, rule = CMT_VRULE_NO_SAMPLE_SPAN;
        else
            v = CMT_VERDICT_UNKNOWN, rule = CMT_VRULE_NO_SAMPLE;
    } else if (f->request > f->total || f->request + allowance > f->total) {
        v = CMT_VERDICT_CAPACITY, rule = CMT_VRULE_LARGER_THAN_DEVICE;
    } else if (f->live + f->request + allowance > f->total) {
        v = CMT_VERDICT_CAPACITY, rule = CMT_VRULE_LIVE_PLUS_REQUEST;
    } else if (out->shortfall > 0 && f->pool_slack_other >= out->shortfall) {
        v = CMT_VERDICT_CACHING, rule = CMT_VRULE_POOLS_COVER;
    } else if (out->shortfall > 0 && out->others >= out->shortfall) {
        v = CMT_VERDICT_OTHER_CONSUMERS, rule = CMT_VRULE_OTHERS_COVER;
    } else if (out->shortfall > 0 && f->pool_slack - f->pool_slack_other >= out->shortfall) {
        v = CMT_VERDICT_FRAGMENTATION, rule = CMT_VRULE_OWN_POOL;
    } else if (out->shortfall > 0) {
        v = f->pool_slack_other >= out->others ? CMT_VERDICT_CACHING : CMT_VERDICT_OTHER_CONSUMERS;
        rule = CMT_VRULE_POOLS_AND_OTHERS;
    } else {
        v = CMT_VERDICT_FRAGMENTATION, rule = CMT_VRULE_ENOUGH_FREE;
    }
    out->verdict = v;
    out->rule = rule;
    uint64_t holds = f->total > allowance ? f->total - allowance : 0;
    if (rule == CMT_VRULE_LARGER_THAN_DEVICE) {
        out->excess = f->request - holds; /* R4: request + allowance > total */
        out->no_setting_fits = true;
    } else if (rule == CMT_VRULE_LIVE_PLUS_REQUEST) {
        out->excess = f->live + f->request - holds;
    }
}

void cmt_oom_decide_in_cache(const struct cmt_oom_figures *f, const struct cmt_cache_oom_figures *c,
                             struct cmt_verdict_result *out)
{
    cmt_oom_decide(f, out);
    uint64_t room = c->cache_free + c->device_free;
    out->excess = 0;
    out->no_setting_fits = false;
    if (room >= c->request) {
        out->verdict = CMT_VERDICT_FRAGMENTATION;
        out->rule = CMT_VRULE_CACHE_FRAGMENTED;
    } else if (out->verdict != CMT_VERDICT_OTHER_CONSUMERS) {
        out->verdict = CMT_VERDICT_CAPACITY;
        out->rule = CMT_VRULE_CACHE_FULL;
        out->excess = c->request - room;
    }
}

const char *cmt_verdict_name(enum cmt_verdict v)
{
    static const char *const names[CMT_VERDICT_COUNT] = {"not-out-of-memory", "capacity", "fragmentation",
                                                         "caching", "other-consumers", "unknown"};
    return v < CMT_VERDICT_COUNT ? names[v] : "unknown";
}

const char *cmt_verdict_rule_id(enum cmt_verdict_rule r)
{
    static const char *const ids[CMT_VRULE_COUNT] = {"R0", "R1", "R2", "R3", "R4", "R5", "R6",
                                                     "R7", "R8", "R9", "R10", "R11", "R12"};
    return r < CMT_VRULE_COUNT ? ids[r] : "?";
}
