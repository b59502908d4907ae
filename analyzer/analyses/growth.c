/* SPDX-License-Identifier: MIT */
#include "growth.h"

#include <stdlib.h>

static double kendall_tau(const uint64_t *v, size_t n)
{
    if (n < 2)
        return 0;
    int64_t s = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            s += (v[j] > v[i]) - (v[j] < v[i]);
    return (double)s / ((double)n * (double)(n - 1) / 2);
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The median of pairwise slopes, bytes per second. */
static double theil_sen(const uint64_t *v, const uint64_t *t, size_t n)
{
    size_t cap = n * (n - 1) / 2;
    double *slopes = malloc((cap ? cap : 1) * sizeof *slopes);
    if (!slopes)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (t[j] > t[i])
                slopes[k++] = ((double)v[j] - (double)v[i]) * 1e9 / (double)(t[j] - t[i]);
    double median = 0;
    if (k) {
        qsort(slopes, k, sizeof *slopes, cmp_double);
        median = k % 2 ? slopes[k / 2] : (slopes[k / 2 - 1] + slopes[k / 2]) / 2;
    }
    free(slopes);
    return median;
}

void cmt_growth_evaluate(const uint64_t *v, const uint64_t *t, size_t n, uint64_t allocs,
                         struct cmt_growth_verdict *out)
{
    *out = (struct cmt_growth_verdict){.n = n};
    if (n == 0)
        return;
    out->first = v[0];
    out->last = v[n - 1];
    out->trend = kendall_tau(v, n);
    if (n < CMT_GROWTH_MIN_SAMPLES || allocs < CMT_GROWTH_MIN_ALLOCS || out->trend < CMT_GROWTH_MIN_TREND ||
        v[n - 1] <= v[0])
        return;
    uint64_t early = 0, late = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t *m = i < n / 2 ? &early : &late;
        if (v[i] > *m)
            *m = v[i];
    }
    if (late <= early)
        return;
    out->candidate = true;
    out->rate = theil_sen(v, t, n);
}
