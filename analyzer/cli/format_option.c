/* SPDX-License-Identifier: MIT */
/* --format, and the older spellings (--json, --csv) that stand for it. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmt_cli_parse_format(const char *cmd, enum cmt_view view, const char *arg, const char **format)
{
    const struct cmt_renderer *r = cmt_renderer_find(view, arg);
    if (!r) {
        char formats[128];
        cmt_renderer_formats(view, NULL, formats, sizeof formats);
        cmt_cli_error("%s: --format is one of %s; got '%s'", cmd, formats, arg);
        return -1;
    }
    *format = r->format;
    return 0;
}

int cmt_cli_render(enum cmt_view view, const char *format, const void *model, FILE *out)
{
    const struct cmt_renderer *r = cmt_renderer_find(view, format ? format : "text");
    if (!r)
        return -1;
    r->render(model, out);
    return 0;
}

int cmt_cli_format_option(const char *cmd, enum cmt_view view, struct cmt_cli_format *f, const char *format,
                          const char *spelling)
{
    const char *name;
    if (cmt_cli_parse_format(cmd, view, format, &name) != 0)
        return -1;
    char said[sizeof f->given_as];
    if (spelling)
        snprintf(said, sizeof said, "%s", spelling);
    else
        snprintf(said, sizeof said, "--format %s", format);
    if (f->given_as[0] && strcmp(f->format, name) != 0) {
        cmt_cli_error("%s: %s and %s contradict each other: give one --format", cmd, f->given_as, said);
        return -1;
    }
    if (!f->given_as[0])
        memcpy(f->given_as, said, sizeof said);
    f->format = name;
    return 0;
}
