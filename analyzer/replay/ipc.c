/* SPDX-License-Identifier: MIT */
#include "ipc.h"

#include <stdlib.h>
#include <string.h>

#include "cumemtrace/format.h"
#include "hash_seed.h"
#include "replay.h"

/* ---- a small map: u64 -> u32 (index + 1) ----------------------------------- */

static size_t map_home(const struct cmt_ipc_map *m, uint64_t key)
{
    uint64_t x = key * m->mult;
    x ^= x >> 29;
    return (size_t)((x * 0xbf58476d1ce4e5b9ull) >> m->shift);
}

static uint32_t map_get(const struct cmt_ipc_map *m, uint64_t key)
{
    if (!m->cap)
        return 0;
    for (size_t i = map_home(m, key);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i])
            return 0;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

static int map_grow(struct cmt_ipc_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct cmt_ipc_map n = {.cap = cap, .mult = m->mult ? m->mult : cmt_hash_multiplier()};
    n.shift = 64 - cmt_log2_pow2(cap);
    n.keys = calloc(cap, sizeof *n.keys);
    n.vals = calloc(cap, sizeof *n.vals);
    if (!n.keys || !n.vals) {
        free(n.keys);
        free(n.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->vals[i])
            continue;
        size_t j = map_home(&n, m->keys[i]);
        while (n.vals[j])
            j = (j + 1) & (cap - 1);
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
    }
    n.count = m->count;
    free(m->keys);
    free(m->vals);
    *m = n;
    return 0;
}

static int map_put(struct cmt_ipc_map *m, uint64_t key, uint32_t val)
{
    if ((m->count + 1) * 2 > m->cap && map_grow(m) != 0)
        return -1;
    size_t i = map_home(m, key);
    while (m->vals[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->vals[i])
        m->count++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

static void map_del(struct cmt_ipc_map *m, uint64_t key)
{
    if (!m->cap)
        return;
    size_t i = map_home(m, key);
    while (m->vals[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->vals[i])
        return;
    m->vals[i] = 0;
    m->count--;
    /* backward shift: move later entries of the run into the hole */
    for (size_t j = (i + 1) & (m->cap - 1); m->vals[j]; j = (j + 1) & (m->cap - 1)) {
        size_t h = map_home(m, m->keys[j]);
        bool between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (between)
            continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->vals[j] = 0;
        i = j;
    }
}

static void map_free(struct cmt_ipc_map *m)
{
    free(m->keys);
    free(m->vals);
}

/* ---- the state -------------------------------------------------------------- */

void cmt_ipc_free(struct cmt_ipc_state *s)
{
    free(s->exports);
    free(s->imports);
    free(s->handle_fp);
    free(s->handle_refs);
    map_free(&s->open);
    map_free(&s->handles);
    memset(s, 0, sizeof *s);
}

static int grow(void **a, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    if (c > UINT32_MAX - 1)
        return -1; /* indices are u32 in the maps */
    void *p = realloc(*a, c * elem);
    if (!p)
        return -1;
    *a = p;
    *cap = c;
    return 0;
}

static int add_import(struct cmt_ipc_state *s, const struct cmt_ipc_import *imp)
{
    uint32_t at = map_get(&s->open, imp->addr);
    if (at) {
        /* The same handle opened again: the driver hands out the same
         * mapping and counts the opens. */
        s->imports[at - 1].opens++;
        return 0;
    }
    if (grow((void **)&s->imports, s->n_imports, &s->imports_cap, sizeof *s->imports) != 0)
        return -1;
    s->imports[s->n_imports++] = *imp;
    if (map_put(&s->open, imp->addr, (uint32_t)s->n_imports) != 0)
        return -1;
    s->live_bytes += imp->size;
    s->live_count++;
    s->open_changes++;
    if (s->live_bytes > s->peak_bytes) {
        s->peak_bytes = s->live_bytes;
        s->peak_ts = imp->open_ts;
    }
    return 0;
}

/* Returns true when addr was an open import (now closed or one open fewer). */
static bool close_import(struct cmt_ipc_state *s, uint64_t addr, uint64_t ts)
{
    uint32_t at = map_get(&s->open, addr);
    if (!at)
        return false;
    struct cmt_ipc_import *imp = &s->imports[at - 1];
    if (--imp->opens)
        return true;
    imp->closed = true;
    imp->close_ts = ts;
    s->live_bytes -= imp->size;
    s->live_count--;
    s->open_changes++;
    map_del(&s->open, addr);
    return true;
}

/* The live allocation that holds addr inside it: a pointer exported from
 * inside an allocation exports the whole allocation. A walk of the live
 * set, only for an export that starts no allocation: exports are few (a
 * handful per process), and the replay keeps no address order of its own
 * (that is the analyses' addr_index, a layer above). */
static bool containing(const struct cmt_live_set *live, uint64_t addr, struct cmt_live *out)
{
    struct cmt_live l;
    for (size_t i = 0; i < cmt_live_set_end(live); i++)
        if (cmt_live_set_at(live, i, &l) && l.ns == CMT_NS_POINTER && addr > l.addr && addr - l.addr < l.size) {
            *out = l;
            return true;
        }
    return false;
}

static int on_export(struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    struct cmt_ipc_state *s = &r->ipc;
    if (rec->result != 0)
        s->failed_exports++;
    if (grow((void **)&s->exports, s->n_exports, &s->exports_cap, sizeof *s->exports) != 0)
        return -1;
    struct cmt_ipc_export x = {
        .ts = rec->ts,
        .fingerprint = rec->result == 0 ? rec->aux[CMT_IPC_AUX_FINGERPRINT] : 0,
        .addr = rec->addr,
        .handle_type = rec->api == CMT_API_CU_MEM_EXPORT_TO_SHAREABLE_HANDLE ? rec->aux[CMT_IPC_AUX_HANDLE_TYPE] : 0,
        .stack = rec->stack,
        .device = rec->device,
        .result = rec->result,
        .api = rec->api,
    };
    struct cmt_live l;
    uint8_t ns = rec->api == CMT_API_CU_MEM_EXPORT_TO_SHAREABLE_HANDLE ? CMT_NS_VMM_HANDLE : CMT_NS_POINTER;
    if (cmt_live_set_find(&r->live, ns, rec->addr, &l) ||
        (ns == CMT_NS_POINTER && containing(&r->live, rec->addr, &l))) {
        x.alloc_found = true;
        x.alloc_size = l.size;
        x.alloc_offset = rec->addr - l.addr;
        x.alloc_stack = l.stack;
        if (x.device < 0 || ns == CMT_NS_POINTER)
            x.device = l.device;
    }
    s->exports[s->n_exports++] = x;
    return 0;
}

int cmt_ipc_record(struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    struct cmt_ipc_state *s = &r->ipc;
    s->records++;
    if (rec->api >= CMT_API_IPC_FIRST && rec->api <= CMT_API_IPC_LAST)
        s->by_api[rec->api - CMT_API_IPC_FIRST]++;
    switch (rec->api) {
    case CMT_API_CUDA_IPC_GET_MEM_HANDLE:
    case CMT_API_CU_IPC_GET_MEM_HANDLE:
    case CMT_API_CU_MEM_EXPORT_TO_SHAREABLE_HANDLE:
    case CMT_API_CU_MEM_POOL_EXPORT_POINTER:
    case CMT_API_CUDA_MEM_POOL_EXPORT_POINTER:
        return on_export(r, rec);
    case CMT_API_CU_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE:
    case CMT_API_CUDA_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE:
    case CMT_API_CU_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE:
    case CMT_API_CUDA_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE:
        /* A pool shared: no memory moves until a pointer of it does (the
         * header counts the call). */
        if (rec->result != 0 && (rec->api == CMT_API_CU_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE ||
                                 rec->api == CMT_API_CUDA_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE))
            s->failed_imports++;
        else if (rec->result != 0)
            s->failed_exports++;
        return 0;
    case CMT_API_CUDA_IPC_OPEN_MEM_HANDLE:
    case CMT_API_CU_IPC_OPEN_MEM_HANDLE:
    case CMT_API_CU_MEM_POOL_IMPORT_POINTER:
    case CMT_API_CUDA_MEM_POOL_IMPORT_POINTER: {
        if (rec->result != 0 || !rec->addr) {
            s->failed_opens++;
            return 0;
        }
        struct cmt_ipc_import imp = {
            .open_ts = rec->ts,
            .addr = rec->addr,
            .size = rec->size,
            .fingerprint = rec->aux[CMT_IPC_AUX_FINGERPRINT],
            .stack = rec->stack,
            .opens = 1,
            .device = rec->device,
            .api = rec->api,
        };
        return add_import(s, &imp);
    }
    case CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE:
    case CMT_API_CU_IPC_CLOSE_MEM_HANDLE:
        if (rec->result != 0)
            s->failed_closes++;
        else if (!close_import(s, rec->addr, rec->ts))
            s->unmatched_closes++;
        return 0;
    case CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE:
        if (rec->result != 0 || !rec->addr) {
            s->failed_imports++;
            return 0;
        }
        s->vmm_imported++;
        uint32_t at = map_get(&s->handles, rec->addr);
        if (at) {
            /* The same physical handle imported again: the driver counts
             * the imports, and each wants its own cuMemRelease. */
            if (s->handle_refs[at - 1] < UINT32_MAX)
                s->handle_refs[at - 1]++;
            return 0;
        }
        size_t cap = s->handle_fp_cap;
        if (grow((void **)&s->handle_fp, s->n_handle_fp, &cap, sizeof *s->handle_fp) != 0)
            return -1;
        if (cap != s->handle_fp_cap) {
            uint32_t *refs = realloc(s->handle_refs, cap * sizeof *refs);
            if (!refs)
                return -1;
            s->handle_refs = refs;
            s->handle_fp_cap = cap;
        }
        s->handle_refs[s->n_handle_fp] = 1;
        s->handle_fp[s->n_handle_fp++] = rec->aux[CMT_IPC_AUX_FINGERPRINT];
        return map_put(&s->handles, rec->addr, (uint32_t)s->n_handle_fp);
    default:
        return 0; /* the reader lets no other api through */
    }
}

static bool is_pool_import(uint8_t api)
{
    return api == CMT_API_CU_MEM_POOL_IMPORT_POINTER || api == CMT_API_CUDA_MEM_POOL_IMPORT_POINTER;
}

bool cmt_ipc_freed(struct cmt_ipc_state *s, uint64_t addr, uint64_t ts)
{
    uint32_t at = map_get(&s->open, addr);
    if (!at || !is_pool_import(s->imports[at - 1].api))
        return false;
    s->imports[at - 1].opens = 1; /* one free releases it, however often it was imported */
    return close_import(s, addr, ts);
}

bool cmt_ipc_is_imported_handle(const struct cmt_ipc_state *s, uint64_t handle)
{
    return map_get(&s->handles, handle) != 0;
}

bool cmt_ipc_release_handle(struct cmt_ipc_state *s, uint64_t handle)
{
    uint32_t at = map_get(&s->handles, handle);
    if (!at)
        return false;
    if (--s->handle_refs[at - 1] == 0)
        map_del(&s->handles, handle);
    s->vmm_released++;
    return true;
}

int cmt_ipc_mapped(struct cmt_ipc_state *s, uint64_t handle, uint64_t addr, uint64_t size, uint64_t ts, uint32_t stack,
                   int32_t device)
{
    uint32_t at = map_get(&s->handles, handle);
    if (!at)
        return 0;
    struct cmt_ipc_import imp = {
        .open_ts = ts,
        .addr = addr,
        .size = size,
        .fingerprint = s->handle_fp[at - 1],
        .stack = stack,
        .opens = 1,
        .device = device,
        .api = CMT_API_CU_MEM_MAP,
    };
    return add_import(s, &imp);
}

void cmt_ipc_unmapped(struct cmt_ipc_state *s, uint64_t addr, uint64_t ts)
{
    uint32_t at = map_get(&s->open, addr);
    if (at && s->imports[at - 1].api == CMT_API_CU_MEM_MAP) {
        s->imports[at - 1].opens = 1; /* one unmap removes the mapping whatever maps it */
        close_import(s, addr, ts);
    }
}
