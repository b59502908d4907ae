/* SPDX-License-Identifier: MIT */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cmt_progress_init(struct cmt_progress *p, size_t traces)
{
    const char *ci = getenv("CI");
    const char *term = getenv("TERM");
    p->n = traces;
    p->on = isatty(STDERR_FILENO) && !(ci && *ci) && !(term && !strcmp(term, "dumb"));
}

void cmt_progress_trace(struct cmt_progress *p, size_t i, const char *path)
{
    if (!p->on)
        return;
    if (p->n > 1)
        fprintf(stderr, "\rcumemtrace: reading trace %zu of %zu: %.60s\033[K", i + 1, p->n, path);
    else
        fprintf(stderr, "\rcumemtrace: reading %.70s\033[K", path);
    fflush(stderr);
}

void cmt_progress_done(struct cmt_progress *p)
{
    if (!p->on)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
}

bool cmt_colour_wanted(void)
{
    const char *no = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    return isatty(STDOUT_FILENO) && !(no && *no) && !(term && !strcmp(term, "dumb"));
}
