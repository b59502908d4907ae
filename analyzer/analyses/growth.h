/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_GROWTH_H
#define CUMEMTRACE_ANALYZER_GROWTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a call site's live bytes keep rising through the run (a leak in a
 * job that never exits cleanly), as opposed to memory allocated once at
 * start-up, or a working set that rises and falls.
 *
 * Input: the site's samples v[0..n-1] at times t[0..n-1]: its floor (lowest
 * live bytes) in each complete checkpoint interval after the one of its
 * first allocation, and last its live bytes when the replay ended (replay.h
 * explains the checkpoints). A site is a growth candidate when all hold:
 *   - n >= CMT_GROWTH_MIN_SAMPLES and it made at least
 *     CMT_GROWTH_MIN_ALLOCS successful allocations;
 *   - trend >= CMT_GROWTH_MIN_TREND, where trend is Kendall's tau-a over
 *     the samples: (rising pairs - falling pairs) / (n (n - 1) / 2) over all
 *     pairs i < j; 1 for a strictly rising series, 0 for noise or a flat one;
 *   - it still rises late: the highest sample of the second half exceeds the
 *     highest of the first half (memory that grew during warm-up and then
 *     stayed flat is not growth);
 *   - v[n-1] > v[0].
 * Candidates are ranked by their rate: the Theil-Sen slope, the median of
 * (v[j] - v[i]) / (t[j] - t[i]) over the pairs, in bytes per second; a few
 * outliers (one large transient buffer) do not move a median. */

#define CMT_GROWTH_MIN_SAMPLES 8
#define CMT_GROWTH_MIN_ALLOCS 4
#define CMT_GROWTH_MIN_TREND 0.6

struct cmt_growth_verdict {
    bool candidate;
    size_t n;
    double trend;        /* Kendall's tau-a, -1 .. 1 (0 when n < 2) */
    double rate;         /* bytes per second; computed for candidates only */
    uint64_t first, last;
};

/* t in ns, increasing (equal times are allowed and skipped by the slope). */
void cmt_growth_evaluate(const uint64_t *v, const uint64_t *t, size_t n, uint64_t allocs,
                         struct cmt_growth_verdict *out);

#endif
