/* SPDX-License-Identifier: MIT */
/* A trace's findings: each added with its rule and level (errors counted),
 * and the words a leak finding is described in (check.c, check_baseline.c). */
#include "check.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_errors.h"
#include "size_parse.h"
#include "units.h"

void cmt_check_describe_leak(char *buf, size_t len, uint64_t bytes, uint64_t count, unsigned api)
{
    char size[32];
    cmt_format_size(bytes, size, sizeof size);
    snprintf(buf, len, "leaked %s in %" PRIu64 " %s (%s)", size, count, count == 1 ? "allocation" : "allocations",
             cmt_api_name(api));
}

struct cmt_finding *cmt_check_add_finding(struct cmt_check_trace *t, enum cmt_rule rule, enum cmt_level level)
{
    if (t->n_findings == t->cap_findings) {
        size_t cap = t->cap_findings ? t->cap_findings * 2 : 8;
        struct cmt_finding *more = realloc(t->findings, cap * sizeof *more);
        if (!more)
            return NULL;
        t->findings = more;
        t->cap_findings = cap;
    }
    struct cmt_finding *f = &t->findings[t->n_findings++];
    memset(f, 0, sizeof *f);
    f->rule = rule;
    f->level = level;
    f->device = -1;
    if (level == CMT_LEVEL_ERROR)
        t->n_errors++;
    return f;
}
