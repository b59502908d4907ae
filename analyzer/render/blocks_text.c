/* SPDX-License-Identifier: MIT */
/* The report's "Inside PyTorch's cache" section (docs/report.md): the block
 * layer's peak with its tensors by call site, the cache's reserved but
 * unallocated bytes per segment class, each failed allocation's two-layer
 * verdict, and the tensors never released. */
#include <inttypes.h>

#include "blocks_report.h"
#include "frames.h"
#include "render_parts.h"
#include "units.h"
#include "text_escape.h"

static void print_site_list(const struct cmt_report *r, FILE *out, const struct cmt_blocks_site *s, size_t n)
{
    char b[64];
    size_t shown = r->opt->top && r->opt->top < n ? r->opt->top : n;
    for (size_t i = 0; i < shown; i++) {
        fprintf(out, "    %s in %" PRIu64 " %s\n", cmt_size_exact_str(s[i].bytes, b, sizeof b), s[i].blocks,
                cmt_plural(s[i].blocks, "tensor", "tensors"));
        cmt_render_text_frames(r, out, s[i].stack, "        ");
    }
    if (shown < n)
        fprintf(out, "    ... %zu more %s (--top)\n", n - shown, cmt_plural(n - shown, "site", "sites"));
}

static void print_classes(FILE *out, const struct cmt_blocks_view *v)
{
    char b1[64], b2[64], b3[64], b4[64];
    for (unsigned c = 0; c < CMT_BL_CLASS_COUNT; c++) {
        const struct cmt_bl_class_state *s = &v->classes[c];
        if (!s->segments)
            continue;
        fprintf(out, "    %-48s %" PRIu64 " %s, reserved %s, allocated %s, unallocated %s, largest free %s\n",
                v->class_name[c], s->segments, cmt_plural(s->segments, "segment", "segments"),
                cmt_size_str(s->reserved, b1, sizeof b1), cmt_size_str(s->allocated, b2, sizeof b2),
                cmt_size_str(s->reserved - s->allocated, b3, sizeof b3),
                cmt_size_str(s->largest_free, b4, sizeof b4));
    }
}

void cmt_blocks_render_text(const struct cmt_report *r, FILE *out)
{
    const struct cmt_blocks_report *b = r->blocks;
    if (!b || !b->on || !b->n_devices)
        return; /* PYTORCH_NO_CUDA_MEMORY_CACHING=1: the allocator reports no blocks */
    if (r->tensors && r->tensors->on)
        return; /* "PyTorch's tensors" (tensors_text.c) says all of it */
    char b1[64], b2[64], b3[64], b4[64];
    fprintf(out, "\nInside PyTorch's cache%s%s (block layer, %" PRIu64 " allocator events)\n",
            b->version[0] ? " " : "", cmt_esc(b->version), b->events);
    if (b->settings_known && !b->alloc_conf[0] && !b->cuda_alloc_conf[0])
        fprintf(out, "  allocator settings: the defaults (neither PYTORCH_ALLOC_CONF nor PYTORCH_CUDA_ALLOC_CONF set)\n");
    if (b->alloc_conf[0])
        fprintf(out, "  allocator settings: PYTORCH_ALLOC_CONF=%s\n", cmt_esc(b->alloc_conf));
    if (b->cuda_alloc_conf[0])
        fprintf(out, "  allocator settings: PYTORCH_CUDA_ALLOC_CONF=%s\n", cmt_esc(b->cuda_alloc_conf));
    for (size_t i = 0; i < b->n_devices; i++) {
        const struct cmt_blocks_device *d = &b->devices[i];
        const struct cmt_blocks_view *p = &d->peak;
        fprintf(out, "  device %d: tensors peak at %s allocated (%s asked), %s reserved then; reserved peak %s\n",
                d->ordinal, cmt_size_exact_str(d->peak_allocated, b1, sizeof b1),
                cmt_size_str(p->requested, b2, sizeof b2), cmt_size_str(p->reserved, b3, sizeof b3),
                cmt_size_exact_str(d->peak_reserved, b4, sizeof b4));
        fprintf(out, "  reserved but unallocated at the peak: %s (caching and fragmentation)\n",
                cmt_size_str(p->reserved - p->allocated, b1, sizeof b1));
        print_classes(out, p);
        fprintf(out, "  tensors live at the peak, by call site:\n");
        print_site_list(r, out, p->sites, p->n_sites);
        for (size_t k = 0; k < d->n_ooms; k++) {
            const struct cmt_blocks_oom *o = &d->ooms[k];
            fprintf(out, "  failed allocation of %s: %s\n", cmt_size_exact_str(o->request, b1, sizeof b1),
                    cmt_esc(o->sentence));
            cmt_render_text_frames(r, out, o->stack, "        ");
            print_classes(out, &o->at);
        }
        if (d->leak_blocks) {
            fprintf(out, "  tensors never released: %s in %" PRIu64 " %s (leaks)\n",
                    cmt_size_exact_str(d->leak_bytes, b1, sizeof b1), d->leak_blocks,
                    cmt_plural(d->leak_blocks, "tensor", "tensors"));
            print_site_list(r, out, d->leaks, d->n_leaks);
        }
        if (d->suppressed_blocks) {
            char label[600];
            fprintf(out, "  tensors never released but suppressed (not counted as leaks): %s in %" PRIu64 " %s\n",
                    cmt_size_exact_str(d->suppressed_bytes, b1, sizeof b1), d->suppressed_blocks,
                    cmt_plural(d->suppressed_blocks, "tensor", "tensors"));
            for (size_t k = 0; k < d->n_suppressed; k++) {
                const struct cmt_blocks_site *s = &d->suppressed[k];
                cmt_report_suppression_label(r, s->suppression, label, sizeof label);
                fprintf(out, "    %s in %" PRIu64 " %s: %s\n", cmt_size_exact_str(s->bytes, b1, sizeof b1), s->blocks,
                        cmt_plural(s->blocks, "tensor", "tensors"), label);
                cmt_render_text_frames(r, out, s->stack, "        ");
            }
        }
    }
    if (b->inconsistencies)
        fprintf(out, "  warning: %" PRIu64 " block %s inconsistent with the segments (first: %s at 0x%" PRIx64 ")\n",
                b->inconsistencies, cmt_plural(b->inconsistencies, "event", "events"), b->first_inconsistency.what,
                b->first_inconsistency.addr);
}
