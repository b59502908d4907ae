/* SPDX-License-Identifier: MIT */
/* The growth statistic (growth.h): what is and is not a growth candidate. */
#include <math.h>

#include "growth.h"
#include "test_util.h"

#define N 40
#define SEC 1000000000ull

static uint64_t t[N], v[N];

static struct cmt_growth_verdict judge(size_t n, uint64_t allocs)
{
    struct cmt_growth_verdict out;
    cmt_growth_evaluate(v, t, n, allocs, &out);
    return out;
}

int main(void)
{
    for (size_t i = 0; i < N; i++)
        t[i] = (i + 1) * SEC / 10; /* samples 0.1 s apart */

    /* A leak of 1 MiB per 0.1 s: 10 MiB/s, trend 1. */
    for (size_t i = 0; i < N; i++)
        v[i] = (i + 1) << 20;
    struct cmt_growth_verdict g = judge(N, 40);
    CHECK(g.candidate);
    CHECK(fabs(g.trend - 1.0) < 1e-9);
    CHECK(fabs(g.rate - 10.0 * (1 << 20)) < 1.0);
    CHECK_EQ_U64(g.first, 1 << 20);
    CHECK_EQ_U64(g.last, (uint64_t)N << 20);

    /* The same leak under noise (a transient buffer in one sample out of
     * four): still a candidate, and the median slope ignores the spikes. */
    for (size_t i = 0; i < N; i++)
        v[i] = ((i + 1) << 20) + (i % 4 == 2 ? 64u << 20 : 0);
    g = judge(N, 40);
    CHECK(g.candidate);
    CHECK(fabs(g.rate - 10.0 * (1 << 20)) < 0.5 * (1 << 20));

    /* Allocated once at start-up and kept: flat, not growth. */
    for (size_t i = 0; i < N; i++)
        v[i] = 256u << 20;
    g = judge(N, 1);
    CHECK(!g.candidate);
    CHECK(g.trend == 0.0);
    g = judge(N, 100);
    CHECK(!g.candidate);

    /* Warm-up: rises over the first quarter, then flat (a cache filling
     * up): not growth, it does not rise late. */
    for (size_t i = 0; i < N; i++)
        v[i] = (i < N / 4 ? i + 1 : N / 4) << 20;
    g = judge(N, 10);
    CHECK(!g.candidate);

    /* A working set that rises and falls (sawtooth): no trend. */
    for (size_t i = 0; i < N; i++)
        v[i] = (i % 5) << 20;
    g = judge(N, 1000);
    CHECK(!g.candidate);
    CHECK(fabs(g.trend) < 0.2);

    /* Rising, but too few samples or too few allocations to say. */
    for (size_t i = 0; i < N; i++)
        v[i] = (i + 1) << 20;
    CHECK(!judge(CMT_GROWTH_MIN_SAMPLES - 1, 40).candidate);
    CHECK(judge(CMT_GROWTH_MIN_SAMPLES, 40).candidate);
    CHECK(!judge(N, CMT_GROWTH_MIN_ALLOCS - 1).candidate);

    /* Shrinking: negative trend. */
    for (size_t i = 0; i < N; i++)
        v[i] = (uint64_t)(N - i) << 20;
    g = judge(N, 40);
    CHECK(!g.candidate);
    CHECK(g.trend < -0.99);
    return 0;
}
