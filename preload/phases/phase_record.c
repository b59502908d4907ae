/* SPDX-License-Identifier: MIT */
/* The recording side of phases, marks and steps (phase_record.h). */
#include "phase_record.h"
#include "thread_block.h"

#include <string.h>

#include "arena.h"
#include "recorder.h"

/* Names seen on this thread, direct-mapped by hash. A name is compared in
 * full, so it must fit; a longer one takes the locked path each time (NVTX
 * names are short: "forward", "aten::addmm, seq = 12"). */
#define NAME_CACHE_SLOTS 16
#define NAME_CACHE_TEXT 46

struct name_cache_slot {
    uint64_t hash;
    uint32_t generation;
    uint32_t id;
    uint16_t len;
    char text[NAME_CACHE_TEXT];
};

/* In a block of its own (thread_block.h): 1 KiB more of static TLS and the
 * shim could not be dlopen'ed. NULL until the thread's first name. */
static struct cmt_thread_block name_cache_blocks;
static __thread struct name_cache_slot *name_cache __attribute__((tls_model("initial-exec")));

void cmt_phase_record_init(void)
{
    cmt_thread_block_init(&name_cache_blocks, NAME_CACHE_SLOTS * sizeof(struct name_cache_slot));
}

static uint64_t range_ids;

static uint64_t name_hash(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a: names are short */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h | 1;
}

static uint32_t intern_locked_path(const char *s, size_t len)
{
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    uint32_t id = cmt_recorder_intern_string_locked(s, len);
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    return id;
}

/* The trace's id for a name; call with the recorder ready on this thread. */
static uint32_t name_id(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    uint64_t h = name_hash(s, len);
    uint32_t gen = cmt_recorder.generation;
    if (!cmt_thread_block_get(&name_cache_blocks, (void **)&name_cache))
        return intern_locked_path(s, len);
    struct name_cache_slot *c = &name_cache[(h >> 7) % NAME_CACHE_SLOTS];
    if (c->hash == h && c->generation == gen && c->len == len && memcmp(c->text, s, len) == 0)
        return c->id;
    uint32_t id = intern_locked_path(s, len);
    if (id && len <= NAME_CACHE_TEXT) {
        c->hash = 0; /* a signal handler reading the slot mid-update sees a miss (it passes through anyway) */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        memcpy(c->text, s, len);
        c->len = (uint16_t)len;
        c->id = id;
        c->generation = gen;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        c->hash = h;
    }
    return id;
}

/* A registered string's id in the current trace (a forked child's trace
 * numbers its strings afresh). */
static uint32_t registered_id(struct cmt_phase_string *s)
{
    if (!s)
        return 0;
    uint32_t gen = cmt_recorder.generation;
    if (__atomic_load_n(&s->generation, __ATOMIC_ACQUIRE) == gen)
        return __atomic_load_n(&s->id, __ATOMIC_RELAXED);
    uint32_t id = intern_locked_path(s->text, s->len);
    if (id) {
        __atomic_store_n(&s->id, id, __ATOMIC_RELAXED);
        __atomic_store_n(&s->generation, gen, __ATOMIC_RELEASE);
    }
    return id;
}

int cmt_phase_record(unsigned api, const char *name, size_t len, struct cmt_phase_string *name_handle,
                     struct cmt_phase_string *domain, uint64_t id)
{
    struct cmt_hook h;
    if (!cmt_hook_enter(&h, CMT_LAYER_MARK)) {
        cmt_hook_leave(&h);
        return 0;
    }
    struct cmt_event e = {.type = CMT_REC_MARK, .api = (uint8_t)api, .kind = CMT_KIND_DEVICE};
    e.aux[CMT_MARK_AUX_NAME] = name_handle ? registered_id(name_handle) : name ? name_id(name, len) : 0;
    e.aux[CMT_MARK_AUX_DOMAIN] = registered_id(domain);
    e.aux[CMT_MARK_AUX_ID] = id;
    /* Interning may have claimed a metadata chunk, never an event chunk: the
     * reserve cmt_hook_enter made still holds. */
    e.ts = cmt_event_ts(h.thread);
    cmt_hook_commit(&h, &e);
    cmt_hook_leave(&h);
    return 1;
}

struct cmt_phase_string *cmt_phase_string_register(const char *s, size_t len)
{
    if (len > 4096)
        len = 4096;
    struct cmt_hook h;
    struct cmt_phase_string *out = NULL;
    if (cmt_hook_enter(&h, CMT_LAYER_MARK)) {
        pthread_mutex_lock(&cmt_recorder.meta.lock);
        out = cmt_arena_alloc(sizeof *out + len + 1);
        if (out) {
            memcpy(out->text, s, len);
            out->text[len] = '\0';
            out->len = (uint32_t)len;
            out->id = cmt_recorder_intern_string_locked(s, len);
            out->generation = out->id ? cmt_recorder.generation : 0;
        }
        pthread_mutex_unlock(&cmt_recorder.meta.lock);
    }
    cmt_hook_leave(&h);
    return out;
}

uint64_t cmt_phase_next_range_id(void)
{
    return __atomic_add_fetch(&range_ids, 1, __ATOMIC_RELAXED);
}
