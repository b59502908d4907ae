/* SPDX-License-Identifier: MIT */
/* The report's memory shared with other processes, for people
 * (docs/report.md, "Memory mapped from another process"). */
#include <inttypes.h>
#include <stdio.h>

#include "render_parts.h"
#include "report.h"
#include "units.h"

#define CMT_SIZE(bytes) cmt_size_exact_str((bytes), (char[64]){""}, 64)

static const char *how_opened(uint8_t api)
{
    return api == CMT_API_CU_MEM_MAP ? "cuMemMap of an imported handle" : cmt_api_name(api);
}

void cmt_ipc_render_text(const struct cmt_report *r, FILE *out)
{
    const struct cmt_ipc_report *x = &r->ipc;
    if (!x->any)
        return;
    char b1[64], b2[64];
    if (x->opened_count || x->failed_opens || x->failed_imports || x->vmm_imported) {
        fprintf(out, "\nMapped from another process (CUDA IPC, imported VMM handles and pool pointers: the other process's memory, "
                     "not in this process's peaks or leaks)\n");
        if (x->opened_count)
            fprintf(out, "  peak %s at %s; opened %s in %" PRIu64 " %s, %s in %" PRIu64 " %s never closed\n",
                    cmt_size_exact_str(x->peak_bytes, b1, sizeof b1), CMT_DURATION(cmt_report_rel_ns(r, x->peak_ts)),
                    cmt_size_exact_str(x->opened_bytes, b2, sizeof b2), x->opened_count,
                    cmt_plural(x->opened_count, "mapping", "mappings"), CMT_SIZE(x->open_bytes), x->open_count,
                    cmt_plural(x->open_count, "mapping", "mappings"));
        else
            fprintf(out, "  nothing mapped\n");
        if (x->unsized_count)
            fprintf(out, "  %" PRIu64 " %s of unknown size, not in these bytes: CUDA does not say how large an imported "
                         "pool pointer is (cuMemGetAddressRange does not answer for it); the exporting process's trace "
                         "has its allocation\n",
                    x->unsized_count, cmt_plural(x->unsized_count, "mapping", "mappings"));
        for (size_t i = 0; i < x->n_sites; i++) {
            const struct cmt_ipc_site *s = &x->sites[i];
            if (s->unsized_count == s->count)
                snprintf(b1, sizeof b1, "size unknown");
            else
                cmt_size_exact_str(s->bytes, b1, sizeof b1);
            fprintf(out, "    %s in %" PRIu64 " %s (%s, device %d, handle %016" PRIx64 "), ", b1, s->count,
                    cmt_plural(s->count, "mapping", "mappings"), how_opened(s->api), (int)s->device, s->fingerprint);
            if (!s->open_count)
                fprintf(out, "%s\n", s->count == 1 ? "closed" : "all closed");
            else if (s->open_count == s->count)
                fprintf(out, "never closed: a leak of a mapping\n");
            else
                fprintf(out, "%" PRIu64 " never closed (%s): a leak of a mapping\n", s->open_count,
                        CMT_SIZE(s->open_bytes));
            cmt_render_text_frames(r, out, s->stack, "        ");
        }
        if (x->vmm_imported)
            fprintf(out, "  imported physical handles (cuMemImportFromShareableHandle): %" PRIu64 ", %" PRIu64
                         " released\n",
                    x->vmm_imported, x->vmm_released);
        if (x->failed_opens || x->failed_imports)
            fprintf(out, "  failed: %" PRIu64 " %s, %" PRIu64 " %s (nothing mapped)\n", x->failed_opens,
                    cmt_plural(x->failed_opens, "open", "opens"), x->failed_imports,
                    cmt_plural(x->failed_imports, "import", "imports"));
        if (x->unmatched_closes || x->failed_closes)
            fprintf(out, "  closes of nothing this trace saw opened: %" PRIu64 ", failed closes: %" PRIu64 "\n",
                    x->unmatched_closes, x->failed_closes);
    }
    if (x->n_exports || x->failed_exports) {
        fprintf(out, "\nExported to other processes: %zu %s", x->n_exports, cmt_plural(x->n_exports, "export", "exports"));
        if (x->failed_exports)
            fprintf(out, ", %" PRIu64 " failed", x->failed_exports);
        fprintf(out, "\n");
        for (size_t i = 0; i < x->n_exports; i++) {
            const struct cmt_ipc_export_row *e = &x->exports[i];
            if (e->found && e->offset)
                fprintf(out, "    %s allocation, the pointer %s inside it (CUDA exports the whole allocation) "
                             "(%s at %s, handle %016" PRIx64 ")\n",
                        cmt_size_exact_str(e->bytes, b1, sizeof b1), cmt_size_exact_str(e->offset, b2, sizeof b2),
                        cmt_api_name(e->api), CMT_DURATION(cmt_report_rel_ns(r, e->ts)), e->fingerprint);
            else if (e->found)
                fprintf(out, "    %s allocation (%s at %s, handle %016" PRIx64 ")\n",
                        cmt_size_exact_str(e->bytes, b1, sizeof b1), cmt_api_name(e->api),
                        CMT_DURATION(cmt_report_rel_ns(r, e->ts)), e->fingerprint);
            else
                fprintf(out, "    no live allocation of this trace holds the pointer (made before tracing, or already "
                             "freed) (%s at %s, handle %016" PRIx64 ")\n",
                        cmt_api_name(e->api), CMT_DURATION(cmt_report_rel_ns(r, e->ts)), e->fingerprint);
            cmt_render_text_frames(r, out, e->found ? e->alloc_stack : e->stack, "        ");
        }
    }
}

/* After the leaks of this process's own memory: mappings never closed. */
void cmt_ipc_render_text_leaks(const struct cmt_report *r, FILE *out)
{
    const struct cmt_ipc_report *x = &r->ipc;
    if (!x->open_count || r->at)
        return;
    char b1[64];
    fprintf(out, "\nLeaks of mappings (mapped from another process and never closed; the memory is the other "
                 "process's): %s in %" PRIu64 " %s\n",
            cmt_size_exact_str(x->open_bytes, b1, sizeof b1), x->open_count,
            cmt_plural(x->open_count, "mapping", "mappings"));
    for (size_t i = 0; i < x->n_sites; i++) {
        const struct cmt_ipc_site *s = &x->sites[i];
        if (!s->open_count)
            continue;
        fprintf(out, "    %s in %" PRIu64 " %s (%s, handle %016" PRIx64 ")\n",
                cmt_size_exact_str(s->open_bytes, b1, sizeof b1), s->open_count,
                cmt_plural(s->open_count, "mapping", "mappings"), how_opened(s->api), s->fingerprint);
        cmt_render_text_frames(r, out, s->stack, "        ");
    }
}
