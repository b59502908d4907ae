/* SPDX-License-Identifier: MIT */
/* A PyTorch failure's "replayed" member (model/oom_replay.h): what the
 * report's replay of the usual settings found about it, written for the
 * forensics' cases and the block layer's failures alike (docs/fragmentation.md,
 * "What to try"). */
#include "forensics_report.h"
#include "render_parts.h"

static const char *outcome_key(enum cmt_replay_outcome o)
{
    switch (o) {
    case CMT_REPLAY_NO_FAILURE:
        return "no-failure";
    case CMT_REPLAY_FAILS_HERE:
        return "fails-here";
    case CMT_REPLAY_FAILS_BEFORE:
        return "fails-before";
    default:
        return "fails-later";
    }
}

static void key_uint_or_null(struct cmt_json *j, const char *k, bool has, uint64_t v)
{
    cmt_json_key(j, k);
    if (has)
        cmt_json_uint(j, v);
    else
        cmt_json_null(j);
}

void cmt_oom_replay_render_json(struct cmt_json *j, const struct cmt_oom_replay *p, bool capacity)
{
    if (!p->on) {
        cmt_json_null(j);
        return;
    }
    char text[2048];
    cmt_json_begin_object(j);
    cmt_json_key(j, "cache_off");
    cmt_json_bool(j, p->uncached);
    cmt_json_key(j, "reproduced");
    cmt_json_bool(j, p->reproduced);
    key_uint_or_null(j, "room_bytes", p->capacity != 0, p->capacity);
    cmt_json_key(j, "settings");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < p->n; i++) {
        const struct cmt_oom_replayed *s = &p->settings[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "setting");
        cmt_json_string(j, s->row->text);
        cmt_json_key(j, "label");
        cmt_json_string(j, s->row->label);
        cmt_json_key(j, "recorded");
        cmt_json_bool(j, i == 0);
        cmt_json_key(j, "outcome");
        cmt_json_string(j, outcome_key(s->outcome));
        cmt_json_key(j, "serves");
        cmt_json_bool(j, s->outcome == CMT_REPLAY_NO_FAILURE || s->outcome == CMT_REPLAY_FAILS_LATER);
        cmt_json_key(j, "peak_reserved_bytes");
        cmt_json_uint(j, s->row->peak_reserved);
        cmt_json_key(j, "verdict");
        cmt_json_string(j, s->row->fits ? NULL : s->row->first.verdict);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    const struct cmt_whatif_row *best = p->best != SIZE_MAX ? p->settings[p->best].row : NULL;
    cmt_json_key(j, "best");
    cmt_json_string(j, best ? best->label : NULL);
    key_uint_or_null(j, "best_peak_reserved_bytes", best != NULL, best ? best->peak_reserved : 0);
    key_uint_or_null(j, "short_by_bytes", capacity && p->short_by, p->short_by);
    cmt_json_key(j, "category");
    if (capacity && p->has_category) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "category");
        cmt_json_string(j, p->category_key);
        cmt_json_key(j, "bytes");
        cmt_json_uint(j, p->category_bytes);
        cmt_json_key(j, "share");
        cmt_json_double(j, p->category_total ? (double)p->category_bytes / (double)p->category_total : 0);
        key_uint_or_null(j, "stack_id", p->category_stack != 0, p->category_stack);
        cmt_json_key(j, "advice");
        cmt_json_string(j, p->category_advice);
        cmt_json_end_object(j);
    } else {
        cmt_json_null(j);
    }
    cmt_oom_replay_found(p, text, sizeof text);
    cmt_json_key(j, "found");
    cmt_json_string(j, text);
    cmt_json_key(j, "what_to_try");
    cmt_json_string(j, cmt_oom_replay_remedy(p, capacity, text, sizeof text) ? text : NULL);
    cmt_json_end_object(j);
}
