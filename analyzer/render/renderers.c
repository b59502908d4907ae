/* SPDX-License-Identifier: MIT */
/* The table of renderers (renderers.h). */
#include "renderers.h"

#include <string.h>

#include "render_parts.h"

/* Each renderer takes its view's model; the casts are the table's only
 * knowledge of the types. */
#define RENDERER(view, format, fn, type)                                                                          \
    static void fn##_entry(const void *model, FILE *out) { fn((const type *)model, out); }
#include "renderer_list.h"
#undef RENDERER

static const struct cmt_renderer renderers[] = {
#define RENDERER(view, format, fn, type) {view, format, fn##_entry},
#include "renderer_list.h"
#undef RENDERER
};

const struct cmt_renderer *cmt_renderer_find(enum cmt_view view, const char *format)
{
    for (size_t i = 0; i < sizeof renderers / sizeof renderers[0]; i++)
        if (renderers[i].view == view && !strcmp(renderers[i].format, format))
            return &renderers[i];
    return NULL;
}

void cmt_renderer_formats(enum cmt_view view, const char *last_word, char *buf, size_t len)
{
    size_t total = 0, n = 0, pos = 0;
    for (size_t i = 0; i < sizeof renderers / sizeof renderers[0]; i++)
        total += renderers[i].view == view;
    if (len)
        buf[0] = 0;
    for (size_t i = 0; i < sizeof renderers / sizeof renderers[0] && pos < len; i++) {
        if (renderers[i].view != view)
            continue;
        int w;
        if (n == 0)
            w = snprintf(buf + pos, len - pos, "%s", renderers[i].format);
        else if (n + 1 == total && last_word)
            w = snprintf(buf + pos, len - pos, " %s %s", last_word, renderers[i].format);
        else
            w = snprintf(buf + pos, len - pos, ", %s", renderers[i].format);
        if (w < 0)
            break;
        pos += (size_t)w;
        n++;
    }
}
