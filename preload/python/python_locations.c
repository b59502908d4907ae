/* SPDX-License-Identifier: MIT */
#include "python_locations.h"

#include <string.h>

#include "arena.h"
#include "meta_records.h"
#include "recorder.h"

/* Keys to FRAME ids: open addressing, read without a lock (an entry is
 * published by storing its hash last; a grown table replaces the old one,
 * which stays valid for readers still in it), written under the metadata
 * lock. */
struct key_entry {
    uint64_t hash; /* 0 = empty */
    struct cmt_python_code_key key;
    uint32_t id;
};

struct key_table {
    uint32_t cap, count;
    struct key_entry entries[];
};

/* (file, function, line) to FRAME ids, so that two instructions of one line
 * share a record. Under the metadata lock only. */
struct line_entry {
    uint32_t file_id, function_id, line, id;
};

struct line_table {
    uint32_t cap, count;
    struct line_entry entries[];
};

static struct key_table *keys;
static struct line_table *lines;
static uint32_t next_frame_id;
uint32_t cmt_python_locations_epoch = 1;

void cmt_python_locations_reset(void)
{
    __atomic_fetch_add(&cmt_python_locations_epoch, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&keys, NULL, __ATOMIC_RELEASE);
    lines = NULL;
    next_frame_id = 0;
}

static uint64_t hash_key(const struct cmt_python_code_key *k)
{
    uint64_t h = k->code * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uint32_t)k->offset * 0xff51afd7ed558ccdull;
    h ^= (k->filename ^ (k->name << 1) ^ (k->linetable << 2) ^ (uint64_t)(uint32_t)k->firstlineno) *
         0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h | 1;
}

static bool key_equal(const struct cmt_python_code_key *a, const struct cmt_python_code_key *b)
{
    return a->code == b->code && a->offset == b->offset && a->filename == b->filename && a->name == b->name &&
           a->linetable == b->linetable && a->firstlineno == b->firstlineno;
}

static uint32_t key_find(const struct key_table *t, uint64_t h, const struct cmt_python_code_key *k)
{
    uint32_t mask = t->cap - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        const struct key_entry *e = &t->entries[i];
        uint64_t eh = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
        if (eh == 0)
            return 0;
        if (eh == h && key_equal(&e->key, k))
            return e->id;
    }
}

uint32_t cmt_python_location_find(const struct cmt_python_code_key *k)
{
    const struct key_table *t = __atomic_load_n(&keys, __ATOMIC_ACQUIRE);
    return t ? key_find(t, hash_key(k), k) : 0;
}

static void key_put(struct key_table *t, uint64_t h, const struct cmt_python_code_key *k, uint32_t id)
{
    uint32_t mask = t->cap - 1;
    uint32_t i = (uint32_t)h & mask;
    while (t->entries[i].hash)
        i = (i + 1) & mask;
    t->entries[i].key = *k;
    t->entries[i].id = id;
    __atomic_store_n(&t->entries[i].hash, h, __ATOMIC_RELEASE);
    t->count++;
}

static struct key_table *keys_with_room_locked(void)
{
    struct key_table *old = keys;
    if (old && (old->count + 1) * 10 <= old->cap * 6)
        return old;
    uint32_t cap = old ? old->cap * 2 : 1024;
    struct key_table *t = cmt_arena_alloc_pages(sizeof *t + (size_t)cap * sizeof(struct key_entry));
    if (!t)
        return NULL;
    t->cap = cap;
    for (uint32_t i = 0; old && i < old->cap; i++)
        if (old->entries[i].hash)
            key_put(t, old->entries[i].hash, &old->entries[i].key, old->entries[i].id);
    __atomic_store_n(&keys, t, __ATOMIC_RELEASE);
    return t;
}

static struct line_entry *line_slot_locked(uint32_t file_id, uint32_t function_id, uint32_t line)
{
    if (!lines || (lines->count + 1) * 2 > lines->cap) {
        uint32_t cap = lines ? lines->cap * 2 : 1024;
        struct line_table *t = cmt_arena_alloc_pages(sizeof *t + (size_t)cap * sizeof(struct line_entry));
        if (!t)
            return NULL;
        t->cap = cap;
        for (uint32_t i = 0; lines && i < lines->cap; i++) {
            const struct line_entry *e = &lines->entries[i];
            if (!e->id)
                continue;
            uint32_t j = (e->file_id * 0x9e3779b1u ^ e->function_id * 0x85ebca6bu ^ e->line) & (cap - 1);
            while (t->entries[j].id)
                j = (j + 1) & (cap - 1);
            t->entries[j] = *e;
            t->count++;
        }
        lines = t;
    }
    uint32_t mask = lines->cap - 1;
    uint32_t j = (file_id * 0x9e3779b1u ^ function_id * 0x85ebca6bu ^ line) & mask;
    for (;; j = (j + 1) & mask) {
        struct line_entry *e = &lines->entries[j];
        if (!e->id || (e->file_id == file_id && e->function_id == function_id && e->line == line))
            return e;
    }
}

static uint32_t write_frame_locked(uint32_t file_id, uint32_t function_id, uint32_t line)
{
    if (!cmt_meta_write_frame_locked(&cmt_recorder.tf, &cmt_recorder.meta, next_frame_id + 1, function_id, file_id,
                                     line, 1 /* language: Python */))
        return 0;
    return ++next_frame_id;
}

uint32_t cmt_python_location_add_locked(const struct cmt_python_code_key *k, const char *file, size_t file_len,
                                        const char *function, size_t function_len, uint32_t line)
{
    uint64_t h = hash_key(k);
    struct key_table *t = keys_with_room_locked();
    if (!t)
        return 0;
    uint32_t id = key_find(t, h, k); /* another thread may have added it */
    if (id)
        return id;
    uint32_t file_id = cmt_recorder_intern_string_locked(file, file_len);
    uint32_t function_id = cmt_recorder_intern_string_locked(function, function_len);
    if (!file_id || !function_id)
        return 0;
    struct line_entry *e = line_slot_locked(file_id, function_id, line);
    if (!e)
        return 0;
    if (!e->id) {
        uint32_t fresh = write_frame_locked(file_id, function_id, line);
        if (!fresh)
            return 0;
        *e = (struct line_entry){file_id, function_id, line, fresh};
        lines->count++;
    }
    key_put(t, h, k, e->id);
    return e->id;
}
