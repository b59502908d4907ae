/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_CLOCK_H
#define CUMEMTRACE_PRELOAD_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Every timestamp in a trace is CLOCK_MONOTONIC in ns (format.h), read one
 * of two ways:
 *
 *   cmt_now_ns    clock_gettime through the vDSO: trace start, metadata.
 *   cmt_clock_ns  the event clock: one TSC read converted by the process's
 *                 one conversion, re-anchored on clock_gettime every
 *                 millisecond. Events, chunk claims and END take it.
 *
 * Why the TSC: clock_gettime was the largest single cost of a recorded event
 * (23.5 ns of ~30 on the 2-vCPU EPYC VM, 33-50 ns on the H200 host; issue 7).
 * Most of it is the ordered TSC read inside the vDSO (lfence;rdtsc: 19 ns
 * here, a plain rdtsc 9.6 ns) plus the seqlock around the kernel's data.
 *
 * Why one conversion for the process: the replay orders events of different
 * threads by their timestamps, and a free on one thread followed by an
 * allocation of the same address on another can be 100 ns apart on the
 * simulated device. With an anchor per thread (the first design), two
 * threads mapped the same TSC instant to nanoseconds that differed by their
 * anchors' errors (tens of ns, up to microseconds), and a correct program
 * was now and then told of "releases never seen allocated" (issue 15).
 * Every thread now maps a TSC value through the same function, which is
 * continuous and never decreasing in the TSC, across re-anchors included:
 * two events on different threads sort in the order of their TSC reads,
 * and the only error left between threads is the hardware's (the TSCs'
 * synchronisation, an unfenced read running a few dozen instructions early).
 *
 *   ts = ns_anchor + ((tsc - tsc_anchor) * mult) >> CMT_CLOCK_SHIFT   (signed)
 *
 * The conversion lives in two slots (clock.c); a writer fills the one not
 * in use under its sequence count, then makes it current, so a reader never
 * waits for a writer and never reads a slot half-written (it checks the
 * slot's count and retries in the rare case its index went stale). A
 * conversion serves TSC values within one window (1 ms of cycles) on either
 * side of its anchor; the first read past that re-anchors (one thread, a
 * try-lock; the others extrapolate meanwhile). A re-anchor takes a fresh
 * (TSC, clock_gettime) pair and corrects the conversion's error against it
 * by its rate over the next window (a slew), never by a step back, so a
 * later TSC value never maps to an earlier nanosecond. docs/performance.md
 * states the error bound. Every caller still passes a floor (its stream's
 * previous timestamp) below which no value is returned: a thread moved to
 * a CPU whose counter lags keeps its timestamps in order.
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
 * window), the clock_gettime calls shrink with it: at 1 ms a process that
 * records without pause pays one clock_gettime pair per millisecond. */
#define CMT_CLOCK_WINDOW_NS 1000000u

/* One conversion (clock.c keeps two). */
struct cmt_clock_slot {
    uint32_t seq;       /* odd while the slot is being written */
    uint32_t frac;      /* the anchor's fraction of a nanosecond, in 2^-32 ns: */
    uint64_t tsc;       /* the anchor: a TSC value... */
    uint64_t ns;        /* ...and the nanosecond it maps to (plus frac: re-anchors lose nothing to rounding) */
    uint64_t mult;      /* ns per cycle << CMT_CLOCK_SHIFT within the window (the rate plus the slew) */
    uint64_t rate;      /* ns per cycle << CMT_CLOCK_SHIFT beyond it (the calibration when anchored) */
    uint64_t fast;      /* cycles either side of the anchor the fast path serves; 0: none (no conversion, tests) */
    uint64_t window;    /* cycles either side of the anchor the conversion serves */
};

struct cmt_clock_conversion {
    uint32_t current; /* index of the slot in use */
    uint32_t reserved;
    struct cmt_clock_slot slot[2];
};

extern struct cmt_clock_conversion cmt_clock_conversion;

/* After a failed attempt to establish the conversion (no pair narrow
 * enough), this many cycles of reads take clock_gettime alone before the
 * next attempt, when the rate is not known yet (else a window's worth). */
#define CMT_CLOCK_BACKOFF_CYCLES (1ull << 21)

/* Set once by cmt_clock_init, read-only afterwards. */
extern bool cmt_clock_tsc_on;


/* The slow path, at counter value tsc: re-anchors when the conversion's
 * window is past (or tsc lies below it), extrapolates while another thread
 * re-anchors, returns clock_gettime's value while there is no conversion
 * (establishing one when the calibration allows, with a back-off after a
 * failed attempt). Never below floor. */
uint64_t cmt_clock_slow(uint64_t tsc, uint64_t floor);

#if defined(__x86_64__)
/* Not ordered (no lfence): the read may run a few dozen instructions early,
 * which is inside the error bound and costs 9.6 ns less than lfence;rdtsc. */
static inline uint64_t cmt_rdtsc(void)
{
    return __builtin_ia32_rdtsc();
}

/* The conversion at a counter value: given (the test seam: a TSC past the
 * window or below the anchor) or read here, between the loads of the slot
 * and its sequence count, so that the value read belongs to the slot. */
static inline __attribute__((always_inline)) uint64_t cmt_clock_convert(bool given, uint64_t given_tsc,
                                                                        uint64_t floor)
{
    const struct cmt_clock_conversion *c = &cmt_clock_conversion;
    const struct cmt_clock_slot *s = &c->slot[__atomic_load_n(&c->current, __ATOMIC_ACQUIRE) & 1u];
    uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    uint64_t tsc = given ? given_tsc : cmt_rdtsc();
    uint64_t a_tsc = __atomic_load_n(&s->tsc, __ATOMIC_RELAXED);
    uint64_t a_ns = __atomic_load_n(&s->ns, __ATOMIC_RELAXED);
    uint32_t frac = __atomic_load_n(&s->frac, __ATOMIC_RELAXED);
    uint64_t mult = __atomic_load_n(&s->mult, __ATOMIC_RELAXED);
    uint64_t fast = __atomic_load_n(&s->fast, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t d = tsc - a_tsc;
    /* One test for all: a slot being written or rewritten (seq odd or
     * changed), no fast window (fast 0), a TSC outside [anchor - fast,
     * anchor + fast). */
    if (__builtin_expect(((seq & 1u) | (seq ^ __atomic_load_n(&s->seq, __ATOMIC_RELAXED))) != 0 ||
                             d + fast >= 2 * fast,
                         0))
        return cmt_clock_slow(tsc, floor);
    /* |d| < fast (about 1 ms of cycles, < 2^25) and mult < 2^36 (the
     * calibration accepts 100 MHz to 20 GHz, a slew adds 1/16): the product
     * fits in 63 bits, frac too. Arithmetic shift: d may be negative. */
    uint64_t v = a_ns + (uint64_t)(((int64_t)d * (int64_t)mult + (int64_t)frac) >> CMT_CLOCK_SHIFT);
    return v > floor ? v : floor;
}
#endif

/* The event clock: CLOCK_MONOTONIC ns, never below floor. */
static inline __attribute__((always_inline)) uint64_t cmt_clock_ns(uint64_t floor)
{
#if defined(__x86_64__)
    if (__builtin_expect(cmt_clock_tsc_on, 1))
        return cmt_clock_convert(false, 0, floor);
#endif
    return cmt_now_ns_at_least(floor);
}

/* The event clock for what belongs to no thread's stream: chunk claims and
 * the END record, which must order with the events around them. */
static inline uint64_t cmt_clock_now(void)
{
    return cmt_clock_ns(0);
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
 * ahead or behind clock_gettime (the first one ahead, then either way), far
 * beyond the error the calibration allows, so that the re-anchor's step
 * forward and its slew at the limit are exercised, and with them every
 * ordering guarantee; there being one anchor, the threads share its error.
 * (With an anchor per thread, the first design, the same setting moved
 * each thread's timestamps against the others'.) */
void cmt_clock_set_test_skew(uint64_t skew_ns);

/* The calibration: ns per cycle << CMT_CLOCK_SHIFT, 0 while unknown. */
uint64_t cmt_clock_mult(void);

/* The conversion in use (a copy of the current slot; fast 0 and window 0
 * while there is none): for tests and benchmarks. */
struct cmt_clock_slot cmt_clock_current(void);

/* Re-anchors now, as an expired window would (tests: the slew, the order
 * across a re-anchor). Returns whether this call wrote the conversion (it
 * does not when another thread holds the writer's try-lock, or no
 * calibration is known). */
bool cmt_clock_reanchor_now(void);

/* In a forked child: a calibration or conversion another parent thread was
 * updating at the fork is left to the child, unlocked. */
void cmt_clock_fork_child(void);

#endif
