/* SPDX-License-Identifier: MIT */
/* Preloaded before the shim: counts the calls of clock_gettime with
 * CLOCK_MONOTONIC (the shim's clock, clock.h) and prints the count at exit
 * to stderr as "count_clock: N". With the TSC event clock a recorded event
 * needs none; with CUMEMTRACE_CLOCK=monotonic each needs one. */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static int (*next_clock_gettime)(clockid_t, struct timespec *);
static unsigned long monotonic_calls;

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec *ts)
{
    int (*next)(clockid_t, struct timespec *) = __atomic_load_n(&next_clock_gettime, __ATOMIC_ACQUIRE);
    if (!next) {
        next = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
        __atomic_store_n(&next_clock_gettime, next, __ATOMIC_RELEASE);
    }
    if (id == CLOCK_MONOTONIC)
        __atomic_add_fetch(&monotonic_calls, 1, __ATOMIC_RELAXED);
    return next(id, ts);
}

__attribute__((destructor)) static void report(void)
{
    fprintf(stderr, "count_clock: %lu\n", __atomic_load_n(&monotonic_calls, __ATOMIC_RELAXED));
}
