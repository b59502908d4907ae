/* SPDX-License-Identifier: MIT */
/* A command's one trace: a file, or "-" for the standard input (read whole
 * into memory first: the reader needs to seek, a pipe cannot). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"

bool cmt_cli_is_stdin(const char *path)
{
    return path && !strcmp(path, "-");
}

char *cmt_cli_read_stdin(size_t *size, char *msg, size_t msglen)
{
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, stdin);
        if (n < cap)
            break;
        char *more = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!more) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = more;
        cap *= 2;
    }
    if (!buf || ferror(stdin)) {
        snprintf(msg, msglen,
                 buf ? "cannot read the standard input: check the command that feeds it" : "out of memory");
        free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

int cmt_cli_analyse(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns,
                    const struct cmt_analysis_options *opt)
{
    if (!cmt_cli_is_stdin(path))
        return cmt_analysis_run_with(a, path, stop_at_ns, opt);
    char msg[sizeof a->message];
    size_t n = 0;
    char *buf = cmt_cli_read_stdin(&n, msg, sizeof msg);
    if (!buf) {
        memset(a, 0, sizeof *a);
        a->path = path;
        snprintf(a->message, sizeof a->message, "%s", msg);
        return -1;
    }
    /* The analysis keeps the bytes as a->data; cmt_cli_analysis_free frees them. */
    return cmt_analysis_run_memory_with(a, buf, n, path, stop_at_ns, opt);
}

void cmt_cli_analysis_free(struct cmt_analysis *a)
{
    void *owned = cmt_cli_is_stdin(a->path) ? (void *)a->data : NULL;
    cmt_analysis_free(a);
    free(owned);
}
