/* SPDX-License-Identifier: MIT */
#include "ipc_report.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"

static int by_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static int site_order(const void *pa, const void *pb)
{
    const struct cmt_ipc_site *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->first_ts != b->first_ts)
        return a->first_ts < b->first_ts ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

bool cmt_ipc_exported(const struct cmt_ipc_report *ipc, uint64_t stack)
{
    return ipc->n_exported_stacks &&
           bsearch(&stack, ipc->exported_stacks, ipc->n_exported_stacks, sizeof stack, by_u64) != NULL;
}

/* Sites by canonical stack: a linear search over the sites so far, bounded
 * by the distinct sites (few: a program opens handles from a handful of
 * places), kept fast for many imports of one site by remembering the last. */
static struct cmt_ipc_site *site_of(struct cmt_ipc_report *x, uint64_t stack, size_t *last)
{
    if (*last < x->n_sites && x->sites[*last].stack == stack)
        return &x->sites[*last];
    for (size_t i = 0; i < x->n_sites; i++)
        if (x->sites[i].stack == stack) {
            *last = i;
            return &x->sites[i];
        }
    *last = x->n_sites;
    return &x->sites[x->n_sites++];
}

int cmt_ipc_report_build(struct cmt_report *r, const struct cmt_replay *rp)
{
    const struct cmt_ipc_state *s = &rp->ipc;
    struct cmt_ipc_report *x = &r->ipc;
    memset(x, 0, sizeof *x);
    x->any = s->records != 0;
    if (!x->any)
        return 0;
    x->peak_bytes = s->peak_bytes;
    x->peak_ts = s->peak_ts;
    x->failed_exports = s->failed_exports;
    x->failed_opens = s->failed_opens;
    x->failed_closes = s->failed_closes;
    x->unmatched_closes = s->unmatched_closes;
    x->failed_imports = s->failed_imports;
    x->vmm_imported = s->vmm_imported;
    x->vmm_released = s->vmm_released;
    if (s->n_imports) {
        x->sites = calloc(s->n_imports, sizeof *x->sites);
        x->imports = calloc(s->n_imports, sizeof *x->imports);
        if (!x->sites || !x->imports)
            return -1;
    }
    size_t last = 0;
    for (size_t i = 0; i < s->n_imports; i++) {
        const struct cmt_ipc_import *imp = &s->imports[i];
        uint64_t stack = cmt_frames_canonical(r->frames, imp->stack);
        struct cmt_ipc_site *site = site_of(x, stack, &last);
        if (!site->count) {
            site->stack = stack;
            site->api = imp->api;
            site->device = imp->device;
            site->fingerprint = imp->fingerprint;
            site->first_ts = imp->open_ts;
        }
        site->bytes += imp->size;
        site->count++;
        x->opened_bytes += imp->size;
        x->opened_count++;
        if (!imp->size) {
            site->unsized_count++;
            x->unsized_count++;
        }
        if (!imp->closed) {
            site->open_bytes += imp->size;
            site->open_count++;
            x->open_bytes += imp->size;
            x->open_count++;
        }
        x->imports[x->n_imports++] = (struct cmt_ipc_import_row){
            .stack = stack, .bytes = imp->size, .fingerprint = imp->fingerprint, .open_ts = imp->open_ts,
            .closed = imp->closed};
    }
    if (x->n_sites)
        qsort(x->sites, x->n_sites, sizeof *x->sites, site_order);
    if (s->n_exports) {
        x->exports = calloc(s->n_exports, sizeof *x->exports);
        x->exported_stacks = calloc(s->n_exports, sizeof *x->exported_stacks);
        if (!x->exports || !x->exported_stacks)
            return -1;
    }
    for (size_t i = 0; i < s->n_exports; i++) {
        const struct cmt_ipc_export *e = &s->exports[i];
        if (e->result != 0)
            continue;
        struct cmt_ipc_export_row row = {
            .alloc_stack = e->alloc_found ? cmt_frames_canonical(r->frames, e->alloc_stack) : 0,
            .stack = cmt_frames_canonical(r->frames, e->stack),
            .bytes = e->alloc_size,
            .offset = e->alloc_offset,
            .fingerprint = e->fingerprint,
            .ts = e->ts,
            .handle_type = e->handle_type,
            .device = e->device,
            .api = e->api,
            .found = e->alloc_found,
        };
        x->exports[x->n_exports++] = row;
        if (row.found)
            x->exported_stacks[x->n_exported_stacks++] = row.alloc_stack;
    }
    if (x->n_exported_stacks) {
        qsort(x->exported_stacks, x->n_exported_stacks, sizeof *x->exported_stacks, by_u64);
        size_t k = 1;
        for (size_t i = 1; i < x->n_exported_stacks; i++)
            if (x->exported_stacks[i] != x->exported_stacks[k - 1])
                x->exported_stacks[k++] = x->exported_stacks[i];
        x->n_exported_stacks = k;
    }
    return 0;
}

void cmt_ipc_report_free(struct cmt_ipc_report *x)
{
    free(x->sites);
    free(x->imports);
    free(x->exports);
    free(x->exported_stacks);
    memset(x, 0, sizeof *x);
}
