/* SPDX-License-Identifier: MIT */
/* The report a trace is judged on, with the suppressions applied, and the
 * suppressions credited with what they set aside (check.c,
 * check_baseline.c). */
#include "check.h"

void cmt_check_credit(struct cmt_check *c, const struct cmt_report *r, bool tensors)
{
    for (size_t i = 0; i < r->n_suppressions && i < c->suppressions.n; i++) {
        const struct cmt_suppression_use *u = &r->suppression_use[i];
        struct cmt_suppression *x = &c->suppressions.items[i];
        if (tensors) {
            x->allocations += u->tensors;
            x->bytes += u->tensor_bytes;
        } else {
            x->allocations += u->allocations;
            x->bytes += u->bytes;
        }
    }
}

int cmt_check_build_report(struct cmt_check *c, struct cmt_analysis *a, struct cmt_report *r, bool count)
{
    int rc = cmt_report_build(r, a, &c->report_opt);
    if (rc == 0 && count)
        cmt_check_credit(c, r, false);
    return rc;
}
