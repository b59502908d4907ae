/* SPDX-License-Identifier: MIT */
/* The event clock's slow path: the choice of clock, anchoring, and the
 * calibration of the TSC rate against CLOCK_MONOTONIC (clock.h). */
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "log.h"

bool cmt_clock_tsc_on;

/* A pair whose reads lie further apart than this was interrupted or
 * preempted between them: its time is too uncertain to anchor on. Typical
 * spans: 25 ns on the EPYC VM (74 cycles), 50-70 ns on the H200 host. */
#define CMT_CLOCK_MAX_BRACKET_NS 250u
/* Before the rate is known the limit is in cycles: this many times the
 * narrowest span seen at start-up. */
#define CMT_CLOCK_FIRST_BRACKET_FACTOR 4u
#define CMT_CLOCK_PAIR_TRIES 4
#define CMT_CLOCK_INIT_PAIRS 8
/* The first rate estimate needs this much time since the base pair: its
 * error is at most two half-brackets over the span (at most 250 ns / 1 ms =
 * 250 ppm, 250 ns over a window; typically 20 ns / 1 ms = 20 ppm). Each
 * re-anchor after it measures over a longer span, so by 10 ms the error is
 * a tenth of that. The recorder waits for it at start (cmt_clock_ready). */
#define CMT_CLOCK_MIN_SPAN_NS 1000000ull
/* The base moves forward once the estimate spans this much, so the rate
 * follows what NTP does to CLOCK_MONOTONIC with about a second's lag. */
#define CMT_CLOCK_REBASE_NS 1000000000ull
/* A thread finding its anchor's prediction this far off the new pair takes
 * the rate over its own last window (a fast slew, a changed frequency). */
#define CMT_CLOCK_DRIFT_NS 1000u
/* Accepted TSC rates: 100 MHz to 20 GHz (mult < 2^36, clock.h). */
#define CMT_CLOCK_MIN_MULT ((1ull << CMT_CLOCK_SHIFT) / 20u)
#define CMT_CLOCK_MAX_MULT ((1ull << CMT_CLOCK_SHIFT) * 10u)

/* Published for every thread (relaxed atomics: a reader takes either the
 * old or the new value, both valid). */
static uint64_t published_mult;   /* 0: not calibrated yet */
static uint64_t published_window; /* CMT_CLOCK_WINDOW_NS in cycles */
static uint64_t bracket_limit;    /* pairs wider than this many cycles are not used */

static uint64_t test_skew_ns; /* CUMEMTRACE_CLOCK_TEST_SKEW_NS */

/* The calibration, updated by whichever thread wins calib_busy (a try-lock:
 * a thread finding it taken skips the update, never waits). On a cache line
 * of its own: the try-lock is written at every re-anchor, and no line that
 * the hot path reads (cmt_clock_tsc_on) should bounce with it. */
static struct {
    int calib_busy;
    bool base_valid;
    uint64_t base_tsc, base_ns;
    uint64_t estimate_span_ns; /* the span the published rate was measured over */
} __attribute__((aligned(64))) cal;

#if defined(__x86_64__)

static inline uint64_t rdtsc_ordered(void)
{
    /* Both reads of a pair fenced: the counter is read where the program
     * says, so the pair brackets the vDSO's own read. Slow path only. */
    __builtin_ia32_lfence();
    return __builtin_ia32_rdtsc();
}

struct clock_pair {
    uint64_t tsc;     /* mid-point of the two counter reads */
    uint64_t ns;      /* clock_gettime between them */
    uint64_t bracket; /* cycles between the two counter reads */
};

static struct clock_pair read_pair(void)
{
    uint64_t t1 = rdtsc_ordered();
    uint64_t ns = cmt_now_ns();
    uint64_t t2 = rdtsc_ordered();
    return (struct clock_pair){t1 + (t2 - t1) / 2, ns, t2 - t1};
}

/* The narrowest of up to tries pairs; stops at the first within limit. */
static struct clock_pair read_good_pair(unsigned tries, uint64_t limit)
{
    struct clock_pair best = read_pair();
    for (unsigned i = 1; i < tries && best.bracket > limit; i++) {
        struct clock_pair p = read_pair();
        if (p.bracket < best.bracket)
            best = p;
    }
    return best;
}

static uint64_t rate_of(uint64_t dns, uint64_t dtsc)
{
    return (uint64_t)(((unsigned __int128)dns << CMT_CLOCK_SHIFT) / dtsc);
}

static void publish(uint64_t mult)
{
    __atomic_store_n(&published_window, ((uint64_t)CMT_CLOCK_WINDOW_NS << CMT_CLOCK_SHIFT) / mult, __ATOMIC_RELAXED);
    __atomic_store_n(&bracket_limit, ((uint64_t)CMT_CLOCK_MAX_BRACKET_NS << CMT_CLOCK_SHIFT) / mult, __ATOMIC_RELAXED);
    __atomic_store_n(&published_mult, mult, __ATOMIC_RELAXED);
}

static void rebase(const struct clock_pair *p)
{
    cal.base_tsc = p->tsc;
    cal.base_ns = p->ns;
    cal.base_valid = true;
}

/* Feeds one good pair to the calibration. prev: the thread's anchor before
 * this pair (its prediction checks the published rate). */
static void calibrate(const struct clock_pair *p, const struct cmt_clock_anchor *prev)
{
    if (__atomic_exchange_n(&cal.calib_busy, 1, __ATOMIC_ACQUIRE))
        return;
    if (!cal.base_valid || p->tsc <= cal.base_tsc || p->ns <= cal.base_ns) {
        rebase(p); /* no base yet, or the counter went back: start over */
        goto out;
    }
    /* Drift: the thread's last anchor, taken a window or so ago, mispredicts
     * this pair by more than the published rate can explain. (Skewed test
     * anchors mispredict on purpose.) */
    uint64_t since = p->tsc - prev->tsc;
    if (prev->window && !test_skew_ns && p->tsc > prev->tsc && since <= 4 * prev->window && p->ns > prev->ns) {
        uint64_t predicted = prev->ns + (uint64_t)(((unsigned __int128)since * prev->mult) >> CMT_CLOCK_SHIFT);
        uint64_t off = predicted > p->ns ? predicted - p->ns : p->ns - predicted;
        uint64_t local = rate_of(p->ns - prev->ns, since);
        if (off > CMT_CLOCK_DRIFT_NS && local >= CMT_CLOCK_MIN_MULT && local <= CMT_CLOCK_MAX_MULT) {
            publish(local);
            cal.estimate_span_ns = p->ns - prev->ns;
            rebase(p);
            goto out;
        }
    }
    uint64_t span_ns = p->ns - cal.base_ns;
    uint64_t wanted = cal.estimate_span_ns < CMT_CLOCK_MIN_SPAN_NS ? CMT_CLOCK_MIN_SPAN_NS : cal.estimate_span_ns;
    if (wanted > CMT_CLOCK_REBASE_NS)
        wanted = CMT_CLOCK_REBASE_NS;
    if (span_ns >= wanted) {
        uint64_t mult = rate_of(span_ns, p->tsc - cal.base_tsc);
        if (mult < CMT_CLOCK_MIN_MULT || mult > CMT_CLOCK_MAX_MULT) {
            rebase(p); /* not a counter we can use (yet): keep clock_gettime */
            goto out;
        }
        publish(mult);
        cal.estimate_span_ns = span_ns;
        if (span_ns >= CMT_CLOCK_REBASE_NS)
            rebase(p);
    }
out:
    __atomic_store_n(&cal.calib_busy, 0, __ATOMIC_RELEASE);
}

uint64_t cmt_clock_reanchor(struct cmt_clock_anchor *a, uint64_t tsc, uint64_t floor)
{
    /* Where no pair is ever narrow enough (under valgrind; a clock_gettime
     * slower than the bracket allows), trying at every read cost up to
     * CMT_CLOCK_PAIR_TRIES clock_gettime calls per event: after a failure
     * the reads of the back-off period are clock_gettime's alone. Unsigned
     * difference: a counter that went back ends the back-off. */
    if (a->failed_tsc) {
        uint64_t window = __atomic_load_n(&published_window, __ATOMIC_RELAXED);
        if (tsc - a->failed_tsc < (window ? window : CMT_CLOCK_BACKOFF_CYCLES))
            return cmt_now_ns_at_least(floor);
    }
    uint64_t limit = __atomic_load_n(&bracket_limit, __ATOMIC_RELAXED);
    struct clock_pair p = read_good_pair(CMT_CLOCK_PAIR_TRIES, limit);
    if (p.bracket <= limit) {
        calibrate(&p, a);
        uint64_t mult = __atomic_load_n(&published_mult, __ATOMIC_RELAXED);
        if (mult) {
            /* A thread's first anchor ahead (its last one may be its only
             * one: the exit sample's), later ones either way. */
            if (__builtin_expect(test_skew_ns != 0, 0))
                a->ns = a->window == 0 || ((p.tsc >> 8) & 1) ? p.ns + test_skew_ns : p.ns - test_skew_ns;
            else
                a->ns = p.ns;
            a->tsc = p.tsc;
            a->mult = mult;
            a->window = __atomic_load_n(&published_window, __ATOMIC_RELAXED);
            a->failed_tsc = 0;
            return p.ns > floor ? p.ns : floor;
        }
    }
    /* No anchor: this read is clock_gettime's, and so are the next ones
     * until the back-off ends. */
    a->window = 0;
    a->failed_tsc = p.tsc ? p.tsc : 1;
    return p.ns > floor ? p.ns : floor;
}

void cmt_clock_ready(void)
{
    if (!cmt_clock_tsc_on || __atomic_load_n(&published_mult, __ATOMIC_RELAXED))
        return;
    /* To a deadline, not for a duration: a program whose timer signals
     * come faster than the sleep's slack (50 us) would never see a relative
     * sleep end (tests/e2e/programs/signal_reentry.c did not). */
    uint64_t deadline = cal.base_ns + CMT_CLOCK_MIN_SPAN_NS;
    struct timespec until = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
    while (cmt_now_ns() < deadline)
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
    struct cmt_clock_anchor none = {0};
    for (unsigned i = 0; i < CMT_CLOCK_PAIR_TRIES && !__atomic_load_n(&published_mult, __ATOMIC_RELAXED); i++) {
        struct clock_pair p = read_good_pair(CMT_CLOCK_PAIR_TRIES, __atomic_load_n(&bracket_limit, __ATOMIC_RELAXED));
        if (p.bracket <= __atomic_load_n(&bracket_limit, __ATOMIC_RELAXED))
            calibrate(&p, &none);
    }
}

static bool cpu_has_invariant_tsc(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx))
        return false;
    return (edx >> 8) & 1u;
}

#else /* not x86-64: clock_gettime only */

void cmt_clock_ready(void)
{
}

uint64_t cmt_clock_reanchor(struct cmt_clock_anchor *a, uint64_t tsc, uint64_t floor)
{
    (void)tsc;
    a->window = 0;
    return cmt_now_ns_at_least(floor);
}

#endif

bool cmt_clock_choose(enum cmt_clock_mode mode, const struct cmt_clock_facts *facts, const char **refusal)
{
    *refusal = NULL;
    if (mode == CMT_CLOCK_MONOTONIC)
        return false;
    if (!facts->x86_64 || !facts->invariant_tsc) {
        if (mode == CMT_CLOCK_TSC)
            *refusal = !facts->x86_64 ? "the TSC clock is implemented for x86-64 only"
                                      : "this CPU does not report an invariant TSC (CPUID 0x80000007 EDX bit 8)";
        return false;
    }
    if (mode == CMT_CLOCK_TSC)
        return true;
    /* auto: the kernel trusts the TSC for CLOCK_MONOTONIC itself (it checked
     * that the CPUs' counters agree); anything else (kvm-clock, hpet, a TSC
     * the kernel marked unstable) keeps clock_gettime. */
    return facts->clocksource && strcmp(facts->clocksource, "tsc") == 0;
}

/* The kernel's current clocksource, newline stripped; NULL when unreadable. */
static const char *read_clocksource(char *buf, size_t cap)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n;
    do
        n = read(fd, buf, cap - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

void cmt_clock_init(enum cmt_clock_mode mode)
{
    char source[64];
    struct cmt_clock_facts facts = {0};
#if defined(__x86_64__)
    facts.x86_64 = true;
    facts.invariant_tsc = cpu_has_invariant_tsc();
#endif
    /* Only auto looks at the clocksource: a forced choice needs no file. */
    facts.clocksource = mode == CMT_CLOCK_AUTO ? read_clocksource(source, sizeof source) : NULL;
    const char *refusal;
    bool tsc = cmt_clock_choose(mode, &facts, &refusal);
    if (refusal)
        cmt_log_warning("ignoring CUMEMTRACE_CLOCK=tsc: %s; timestamps come from clock_gettime", refusal);

    __atomic_store_n(&cmt_clock_tsc_on, false, __ATOMIC_RELAXED);
    __atomic_store_n(&published_mult, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&published_window, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&bracket_limit, 0, __ATOMIC_RELAXED);
    cal.estimate_span_ns = 0;
    cal.base_valid = false;
    __atomic_store_n(&cal.calib_busy, 0, __ATOMIC_RELEASE);
#if defined(__x86_64__)
    if (!tsc)
        return;
    /* The base pair: the narrowest of a few, and the start-up limit on
     * pairs while the rate (hence a limit in ns) is unknown. */
    struct clock_pair base = read_good_pair(CMT_CLOCK_INIT_PAIRS, 0);
    rebase(&base);
    __atomic_store_n(&bracket_limit, base.bracket * CMT_CLOCK_FIRST_BRACKET_FACTOR, __ATOMIC_RELAXED);
    __atomic_store_n(&cmt_clock_tsc_on, true, __ATOMIC_RELEASE);
#else
    (void)tsc;
#endif
}

void cmt_clock_set_test_skew(uint64_t skew_ns)
{
    test_skew_ns = skew_ns;
}

uint64_t cmt_clock_mult(void)
{
    return __atomic_load_n(&published_mult, __ATOMIC_RELAXED);
}

void cmt_clock_fork_child(void)
{
    __atomic_store_n(&cal.calib_busy, 0, __ATOMIC_RELEASE);
}
