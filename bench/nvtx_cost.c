/* SPDX-License-Identifier: MIT */
/* What an NVTX push/pop pair costs the program (docs/performance.md,
 * "Phases"): nvtxRangePushA + nvtxRangePop with one name, with names that
 * vary over 8, and nvtxDomainRangePushEx with a registered string, timed
 * over a loop of back-to-back pairs, median of 7 runs. Run it bare (NVTX
 * calls are no-ops without a tool) and under the shim as NVTX tool
 * (bench/nvtx_cost.sh does both).
 *
 *   bench_nvtx_cost [PAIRS]     default 1000000 per run */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 7

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define TIME_PAIRS(label, pairs, body)                                         \
    do {                                                                       \
        double runs_[RUNS];                                                    \
        for (int r_ = 0; r_ < RUNS; r_++) {                                    \
            double t0_ = now_ns();                                             \
            for (long i = 0; i < (pairs); i++) {                               \
                body;                                                          \
            }                                                                  \
            runs_[r_] = (now_ns() - t0_) / (double)(pairs);                    \
        }                                                                      \
        qsort(runs_, RUNS, sizeof runs_[0], cmp_double);                       \
        printf("  %-44s %7.1f ns per push/pop pair\n", label, runs_[RUNS / 2]); \
    } while (0)

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 1000000;
    static const char *const names[8] = {"forward", "backward", "optimizer", "layer 1",
                                         "layer 2", "layer 3",  "attention", "mlp"};
    nvtxDomainHandle_t domain = nvtxDomainCreateA("bench");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(domain, "forward");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = reg;
    printf("NVTX push/pop, %ld pairs per run, median of %d runs:\n", pairs, RUNS);
    TIME_PAIRS("nvtxRangePushA(\"forward\") + nvtxRangePop", pairs, {
        nvtxRangePushA("forward");
        nvtxRangePop();
    });
    TIME_PAIRS("nvtxRangePushA(8 names in turn) + Pop", pairs, {
        nvtxRangePushA(names[i & 7]);
        nvtxRangePop();
    });
    TIME_PAIRS("nvtxDomainRangePushEx(registered) + Pop", pairs, {
        nvtxDomainRangePushEx(domain, &a);
        nvtxDomainRangePop(domain);
    });
    return 0;
}
