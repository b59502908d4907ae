/* SPDX-License-Identifier: MIT */
/* What one timestamp costs (docs/performance.md, "The event clock"): the
 * event clock with the TSC and with clock_gettime, clock_gettime itself, and
 * the counter reads underneath, each timed over a loop of back-to-back calls
 * (each call's floor is the previous value, as a thread's stream makes it),
 * median of 7 runs.
 *
 *   bench_clock_cost [CALLS]     default 20000000 per run */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"

#define RUNS 7

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static volatile uint64_t sink;

#define TIME_LOOP(result, calls, body)                                    \
    do {                                                                  \
        double runs_[RUNS];                                               \
        for (int r_ = 0; r_ < RUNS; r_++) {                               \
            uint64_t acc_ = 0, t0_ = cmt_now_ns();                        \
            for (long i_ = 0; i_ < (calls); i_++) {                       \
                body;                                                     \
            }                                                             \
            runs_[r_] = (double)(cmt_now_ns() - t0_) / (double)(calls);   \
            sink += acc_;                                                 \
        }                                                                 \
        qsort(runs_, RUNS, sizeof runs_[0], cmp_double);                  \
        (result) = runs_[RUNS / 2];                                       \
    } while (0)

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 20000000;
    if (calls <= 0) {
        fprintf(stderr, "usage: bench_clock_cost [CALLS]\n");
        return 2;
    }
    double gettime, mono_clock, tsc_clock;
    TIME_LOOP(gettime, calls, acc_ += cmt_now_ns());

    cmt_clock_init(CMT_CLOCK_MONOTONIC);
    TIME_LOOP(mono_clock, calls, acc_ = cmt_clock_ns(acc_));

    cmt_clock_init(CMT_CLOCK_TSC);
    if (!cmt_clock_tsc_on) {
        printf("clock_gettime %.2f ns, event clock (monotonic) %.2f ns; no TSC clock on this machine\n", gettime,
               mono_clock);
        return 0;
    }
    cmt_clock_ready();
    TIME_LOOP(tsc_clock, calls, acc_ = cmt_clock_ns(acc_));
#if defined(__x86_64__)
    double rdtsc, rdtsc_fenced;
    TIME_LOOP(rdtsc, calls, acc_ += cmt_rdtsc());
    TIME_LOOP(rdtsc_fenced, calls, __builtin_ia32_lfence(); acc_ += cmt_rdtsc());
#endif
    printf("ns per call, median of %d runs of %ld calls:\n", RUNS, calls);
    printf("  clock_gettime(CLOCK_MONOTONIC)        %6.2f\n", gettime);
    printf("  event clock, clock_gettime            %6.2f\n", mono_clock);
    printf("  event clock, TSC                      %6.2f\n", tsc_clock);
#if defined(__x86_64__)
    printf("  rdtsc                                 %6.2f\n", rdtsc);
    printf("  lfence; rdtsc                         %6.2f\n", rdtsc_fenced);
#endif
    printf("  TSC rate: %.6f GHz\n", 4294967296.0 / (double)cmt_clock_mult());
    return 0;
}
