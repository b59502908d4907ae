/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_CLOCK_H
#define CUMEMTRACE_PRELOAD_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Every timestamp in a trace is CLOCK_MONOTONIC in ns (format.h), read one
 * of two ways:
 *
 *   cmt_now_ns    clock_gettime through the vDSO: the cold paths (trace
 *                 start, chunk claims, metadata records).
 *   cmt_clock_ns  the event clock: one TSC read converted with a per-thread
 *                 anchor, re-anchored on clock_gettime every millisecond.
 *
 * Why: clock_gettime was the largest single cost of a recorded event (23.5 ns
 * of ~30 on the 2-vCPU EPYC VM, 33-50 ns on the H200 host; issue 7). Most of
 * it is the ordered TSC read inside the vDSO (lfence;rdtsc: 19 ns here, a
 * plain rdtsc 9.6 ns) plus the seqlock around the kernel's conversion data.
 * The conversion here needs neither: the anchor and the rate live in the
 * thread's own TLS line.
 *
 *   ts = ns_anchor + ((tsc - tsc_anchor) * mult) >> CMT_CLOCK_SHIFT
 *
 * An anchor is a (TSC, clock_gettime) pair taken together; it is used for
 * CMT_CLOCK_WINDOW_NS worth of cycles, after which (or when the TSC reads
 * below the anchor: another CPU's counter, a test) the next read takes a
 * fresh pair. mult is calibrated process-wide from pairs far apart (clock.c),
 * so it follows the rate NTP gives CLOCK_MONOTONIC. docs/performance.md
 * states the error bound; every caller also passes a floor (its stream's
 * previous timestamp) below which no value is returned, so one thread's
 * timestamps never decrease even across re-anchors.
 *
 * The TSC is used only where it can be trusted (x86-64, invariant TSC, the
 * kernel's clocksource is "tsc", or CUMEMTRACE_CLOCK=tsc); otherwise
 * cmt_clock_ns is clock_gettime, exactly as before. */

static inline uint64_t cmt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* clock_gettime's value, never below floor: the event clock where it does
 * not read the TSC. */
static inline uint64_t cmt_now_ns_at_least(uint64_t floor)
{
    uint64_t v = cmt_now_ns();
    return v > floor ? v : floor;
}

enum cmt_clock_mode {
    CMT_CLOCK_AUTO = 0,     /* the TSC where trustworthy, else clock_gettime */
    CMT_CLOCK_TSC = 1,      /* the TSC whenever x86-64 with an invariant TSC */
    CMT_CLOCK_MONOTONIC = 2 /* clock_gettime for every timestamp */
};

#define CMT_CLOCK_SHIFT 32
/* How long one anchor is used. The error grows with it (rate error x
 * window), the clock_gettime calls shrink with it: at 1 ms a thread that
 * records without pause pays one clock_gettime per millisecond. */
#define CMT_CLOCK_WINDOW_NS 1000000u

/* A thread's anchor (in its TLS state). All zero: no anchor yet. */
struct cmt_clock_anchor {
    uint64_t tsc;    /* TSC at the anchor (mid-point of the pair's reads) */
    uint64_t ns;     /* CLOCK_MONOTONIC at the same instant */
    uint64_t mult;   /* ns per cycle << CMT_CLOCK_SHIFT, the calibration when anchored */
    uint64_t window; /* cycles the anchor serves; 0: none, the next read anchors */
    uint64_t failed_tsc; /* TSC of the last failed attempt to anchor (only while window is 0); 0: none */
};

/* After a failed attempt to anchor (no pair narrow enough), this many cycles
 * of reads take clock_gettime alone before the next attempt, when the rate
 * is not known yet (else a window's worth). */
#define CMT_CLOCK_BACKOFF_CYCLES (1ull << 21)

/* Set once by cmt_clock_init, read-only afterwards. */
extern bool cmt_clock_tsc_on;

/* The slow path, at counter value tsc: takes a fresh pair, anchors a on it
 * when the calibration allows, returns that clock_gettime value (never
 * below floor). Within the back-off after a failed attempt, only
 * clock_gettime. */
uint64_t cmt_clock_reanchor(struct cmt_clock_anchor *a, uint64_t tsc, uint64_t floor);

#if defined(__x86_64__)
/* Not ordered (no lfence): the read may run a few dozen instructions early,
 * which is inside the error bound and costs 9.6 ns less than lfence;rdtsc. */
static inline uint64_t cmt_rdtsc(void)
{
    return __builtin_ia32_rdtsc();
}
#endif

/* The conversion at a given TSC value: the test seam (a test passes a TSC
 * past the window or below the anchor; the shim passes cmt_rdtsc()). */
static inline __attribute__((always_inline)) uint64_t cmt_clock_ns_at(struct cmt_clock_anchor *a, uint64_t tsc,
                                                                      uint64_t floor)
{
    /* Unsigned: a TSC below the anchor gives a huge difference, so one
     * compare catches both an expired window and a TSC that went back. */
    uint64_t d = tsc - a->tsc;
    if (__builtin_expect(d >= a->window, 0))
        return cmt_clock_reanchor(a, tsc, floor);
    /* d < window (about 1 ms of cycles, < 2^25) and mult < 2^36 (calibration
     * accepts 100 MHz to 20 GHz): the product fits in 64 bits. */
    uint64_t v = a->ns + ((d * a->mult) >> CMT_CLOCK_SHIFT);
    return v > floor ? v : floor;
}

/* The event clock: CLOCK_MONOTONIC ns, never below floor. */
static inline __attribute__((always_inline)) uint64_t cmt_clock_ns(struct cmt_clock_anchor *a, uint64_t floor)
{
#if defined(__x86_64__)
    if (__builtin_expect(cmt_clock_tsc_on, 1))
        return cmt_clock_ns_at(a, cmt_rdtsc(), floor);
#endif
    (void)a;
    return cmt_now_ns_at_least(floor);
}

/* What decides the clock, gathered by cmt_clock_init (a parameter so that
 * tests can try every combination). */
struct cmt_clock_facts {
    bool x86_64;
    bool invariant_tsc;      /* CPUID 0x80000007 EDX bit 8 */
    const char *clocksource; /* the kernel's current clocksource; NULL when unreadable */
};

/* Whether mode and facts give the TSC. When CUMEMTRACE_CLOCK=tsc cannot be
 * honoured, *refusal says why (else it is set to NULL). */
bool cmt_clock_choose(enum cmt_clock_mode mode, const struct cmt_clock_facts *facts, const char **refusal);

/* Decides the clock from the machine and mode, warns once if a forced tsc
 * is refused, and takes the calibration's first pair. At load time, before
 * any event; tests may call it again to switch modes. */
void cmt_clock_init(enum cmt_clock_mode mode);

/* Makes sure the TSC's rate is calibrated, waiting for the rest of the
 * first estimate's span (1 ms from cmt_clock_init) if needed. The recorder
 * calls it when it starts: a CUDA program is far past that by its first
 * allocation, a test program may not be, and without a rate every event
 * would take clock_gettime (and the slow path's bookkeeping with it). */
void cmt_clock_ready(void);

/* Tests only (CUMEMTRACE_CLOCK_TEST_SKEW_NS): every anchor is moved skew_ns
 * ahead or behind (a thread's first one ahead), so that the floors that keep a trace's order
 * whatever the clock's error (recorder.h, trace_file.c) are exercised well
 * beyond the error the calibration allows. */
void cmt_clock_set_test_skew(uint64_t skew_ns);

/* The calibration: ns per cycle << CMT_CLOCK_SHIFT, 0 while unknown. */
uint64_t cmt_clock_mult(void);

/* In a forked child: a calibration another parent thread was updating at
 * the fork is left to the child, unlocked. */
void cmt_clock_fork_child(void);

#endif
