/* SPDX-License-Identifier: MIT */
#include "trace_model.h"

#include <stdlib.h>
#include <string.h>

void cmt_model_init(struct cmt_trace_model *m)
{
    memset(m, 0, sizeof *m);
    m->rank = -1;
}

/* n bytes (8-aligned) carved from the arena; NULL when out of memory. */
#define ARENA_BLOCK (256u * 1024u)
static void *arena_take(struct cmt_model_arena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (n > a->left) {
        if (a->n_blocks == a->cap_blocks) {
            size_t cap = a->cap_blocks ? a->cap_blocks * 2 : 16;
            void **b = realloc(a->blocks, cap * sizeof *b);
            if (!b)
                return NULL;
            a->blocks = b;
            a->cap_blocks = cap;
        }
        /* something larger than a block gets one of its own */
        size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        char *block = malloc(size);
        if (!block)
            return NULL;
        a->blocks[a->n_blocks++] = block;
        if (n > ARENA_BLOCK)
            return block;
        a->next = block;
        a->left = size;
    }
    void *out = a->next;
    a->next += n;
    a->left -= n;
    return out;
}

void cmt_model_free(struct cmt_trace_model *m)
{
    for (size_t i = 0; i < m->arena.n_blocks; i++)
        free(m->arena.blocks[i]);
    free(m->arena.blocks);
    free(m->strings);
    free(m->string_lens);
    free(m->stacks);
    free(m->modules);
    free(m->frames);
    free(m->threads);
    free(m->arg_ids);
    memset(m, 0, sizeof *m);
}

/* Ids are handed out in sequence by the writer's metadata lock; anything else
 * is damage, and rejecting it keeps hostile ids from sizing our tables. */
static bool next_id_ok(struct cmt_trace_model *m, uint32_t id, uint32_t count)
{
    uint32_t expected = count == 0 ? 1 : count;
    if (id != expected) {
        m->rejected_records++;
        return false;
    }
    return true;
}

static void *grow(void *p, uint32_t n, size_t elem)
{
    /* n is the new element count; capacity doubles at powers of two. */
    if (n & (n - 1))
        return p;
    return realloc(p, (size_t)n * 2 * elem);
}

void cmt_model_on_string(void *ctx, uint32_t id, const char *text, size_t len)
{
    struct cmt_trace_model *m = ctx;
    if (!next_id_ok(m, id, m->n_strings))
        return;
    /* No writer makes a longer one (it cuts strings to fit a metadata
     * record); a report prints a module's path with every frame in it, so a
     * crafted 4 MiB path would cost 4 MiB per frame. */
    if (len > CMT_MAX_META_RECORD)
        len = CMT_MAX_META_RECORD;
    uint32_t n = m->n_strings ? m->n_strings + 1 : 2;
    char **s = grow(m->strings, n, sizeof *s);
    size_t *l = s ? grow(m->string_lens, n, sizeof *l) : NULL;
    if (s)
        m->strings = s;
    if (l)
        m->string_lens = l;
    char *copy = l ? arena_take(&m->arena, len + 1) : NULL;
    if (!s || !l || !copy)
        return;
    m->strings = s;
    m->string_lens = l;
    if (m->n_strings == 0) {
        s[0] = NULL;
        l[0] = 0;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    s[id] = copy;
    l[id] = len;
    m->n_strings = n;
}

void cmt_model_on_module(void *ctx, const struct cmt_module_in *in)
{
    struct cmt_trace_model *m = ctx;
    if (!next_id_ok(m, in->id, m->n_modules))
        return;
    uint32_t n = m->n_modules ? m->n_modules + 1 : 2;
    struct cmt_module_def *mods = grow(m->modules, n, sizeof *mods);
    if (!mods)
        return;
    m->modules = mods;
    if (m->n_modules == 0)
        memset(&mods[0], 0, sizeof mods[0]);
    struct cmt_module_def *d = &mods[in->id];
    memset(d, 0, sizeof *d);
    d->path_id = in->path_id;
    d->bias = in->bias;
    d->lo = in->lo;
    d->hi = in->hi;
    d->build_id_len = in->build_id_len < sizeof d->build_id ? in->build_id_len : sizeof d->build_id;
    if (d->build_id_len)
        memcpy(d->build_id, in->build_id, d->build_id_len);
    m->n_modules = n;
}

void cmt_model_on_stack(void *ctx, uint32_t id, uint32_t modules_known, const uint64_t *frames, uint32_t nf)
{
    struct cmt_trace_model *m = ctx;
    if (!next_id_ok(m, id, m->n_stacks))
        return;
    uint32_t n = m->n_stacks ? m->n_stacks + 1 : 2;
    struct cmt_stack_def *st = grow(m->stacks, n, sizeof *st);
    if (!st)
        return;
    m->stacks = st;
    if (m->n_stacks == 0)
        memset(&st[0], 0, sizeof st[0]);
    uint64_t *copy = arena_take(&m->arena, (nf ? nf : 1) * sizeof *copy);
    if (!copy)
        return;
    memcpy(copy, frames, nf * sizeof *copy);
    st[id] = (struct cmt_stack_def){nf, modules_known, copy};
    m->n_stacks = n;
}

void cmt_model_on_frame(void *ctx, const struct cmt_frame_in *in)
{
    struct cmt_trace_model *m = ctx;
    if (!next_id_ok(m, in->id, m->n_frames))
        return;
    uint32_t n = m->n_frames ? m->n_frames + 1 : 2;
    struct cmt_synthetic_frame *fr = grow(m->frames, n, sizeof *fr);
    if (!fr)
        return;
    m->frames = fr;
    if (m->n_frames == 0)
        memset(&fr[0], 0, sizeof fr[0]);
    fr[in->id] = (struct cmt_synthetic_frame){in->function_id, in->file_id, in->line, in->language};
    m->n_frames = n;
}

void cmt_model_on_note(void *ctx, const struct cmt_note_in *n)
{
    struct cmt_trace_model *m = ctx;
    /* A writer says each thing once; a bound keeps a hostile trace from
     * growing the report. */
    if (m->n_notes == CMT_MODEL_MAX_NOTES) {
        m->notes_dropped++;
        return;
    }
    m->notes[m->n_notes++] = (struct cmt_note_def){n->ts, n->source, n->text_id};
}

void cmt_model_on_allocator(void *ctx, const struct cmt_allocator_in *a)
{
    struct cmt_trace_model *m = ctx;
    m->has_allocator = true;
    m->allocator = *a;
}

void cmt_model_on_device(void *ctx, const struct cmt_device_in *d)
{
    struct cmt_trace_model *m = ctx;
    if (d->ordinal >= CMT_MODEL_MAX_DEVICES || m->has_device[d->ordinal])
        return;
    m->has_device[d->ordinal] = true;
    m->device[d->ordinal] = *d;
}

void cmt_model_on_job(void *ctx, const struct cmt_job_in *j)
{
    struct cmt_trace_model *m = ctx;
    if (m->has_job)
        return;
    m->has_job = true;
    m->job = *j;
}

const char *cmt_note_source_name(uint64_t source)
{
    switch (source) {
    case CMT_NOTE_PYTHON:
        return "python";
    case CMT_NOTE_NVTX:
        return "nvtx";
    case CMT_NOTE_BLOCKS:
        return "blocks";
    default:
        return "shim";
    }
}

void cmt_model_on_process(void *ctx, const struct cmt_process_in *p)
{
    struct cmt_trace_model *m = ctx;
    uint32_t *args = malloc((p->argc ? p->argc : 1) * sizeof *args);
    if (!args)
        return;
    memcpy(args, p->arg_ids, p->argc * sizeof *args);
    free(m->arg_ids);
    m->arg_ids = args;
    m->argc = p->argc;
    m->has_process = true;
    m->pid = p->pid;
    m->ppid = p->ppid;
    m->exe_id = p->exe_id;
    m->hostname_id = p->hostname_id;
    m->cwd_id = p->cwd_id;
    m->rank = p->rank;
}

void cmt_model_on_thread(void *ctx, uint32_t tid, uint32_t name_id)
{
    struct cmt_trace_model *m = ctx;
    size_t n = m->n_threads + 1;
    if ((n & (n - 1)) == 0) {
        struct cmt_thread_def *t = realloc(m->threads, n * 2 * sizeof *t);
        if (!t)
            return;
        m->threads = t;
    }
    m->threads[m->n_threads++] = (struct cmt_thread_def){tid, name_id};
}

void cmt_model_on_config(void *ctx, const struct cmt_config_in *c)
{
    struct cmt_trace_model *m = ctx;
    m->config = *c;
    m->has_config = true;
}

void cmt_model_on_end(void *ctx, const struct cmt_end_in *e)
{
    struct cmt_trace_model *m = ctx;
    m->end = *e;
    m->has_end = true;
}

void cmt_model_callbacks(struct cmt_reader_callbacks *cb)
{
    cb->on_string = cmt_model_on_string;
    cb->on_module = cmt_model_on_module;
    cb->on_stack = cmt_model_on_stack;
    cb->on_process = cmt_model_on_process;
    cb->on_thread = cmt_model_on_thread;
    cb->on_config = cmt_model_on_config;
    cb->on_end = cmt_model_on_end;
    cb->on_frame = cmt_model_on_frame;
    cb->on_note = cmt_model_on_note;
    cb->on_allocator = cmt_model_on_allocator;
    cb->on_job = cmt_model_on_job;
    cb->on_device = cmt_model_on_device;
}

const char *cmt_model_string(const struct cmt_trace_model *m, uint32_t id)
{
    return id && id < m->n_strings && m->strings[id] ? m->strings[id] : "";
}

const struct cmt_stack_def *cmt_model_stack(const struct cmt_trace_model *m, uint64_t id)
{
    return id && id < m->n_stacks ? &m->stacks[id] : NULL;
}

const struct cmt_synthetic_frame *cmt_model_synthetic_frame(const struct cmt_trace_model *m, uint64_t value)
{
    if (!(value & CMT_FRAME_SYNTHETIC_BIT))
        return NULL;
    uint64_t id = value & 0xffffffffu;
    return id && id < m->n_frames ? &m->frames[id] : NULL;
}
