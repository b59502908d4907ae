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

/* A re-anchor corrects the conversion's error against its fresh pair over
 * the next window by at most this fraction of it (1/16: 62.5 us per ms, a
 * 6% rate change at most; errors are tens of ns). A conversion behind
 * clock_gettime by more steps forward instead; one ahead by more is slowed
 * down over several windows, never stepped back. */
#define CMT_CLOCK_SLEW_SHIFT 4
/* The fast path serves all but the last 1/8 of a window; the first read in
 * that last part re-anchors (the others keep reading the old conversion,
 * which stays valid to the window's end), so that a busy process switches
 * conversions continuously, before the old one runs out. */
#define CMT_CLOCK_EARLY_DIVISOR 8u

/* Published for every thread (relaxed atomics: a reader takes either the
 * old or the new value, both valid). */
static uint64_t published_mult;   /* 0: not calibrated yet */
static uint64_t published_window; /* CMT_CLOCK_WINDOW_NS in cycles */
static uint64_t bracket_limit;    /* pairs wider than this many cycles are not used */

static uint64_t test_skew_ns; /* CUMEMTRACE_CLOCK_TEST_SKEW_NS */

/* The process's one conversion (clock.h). Read by every event, written
 * once per millisecond: a line of its own, shared read-only between CPUs
 * nearly always. */
struct cmt_clock_conversion cmt_clock_conversion __attribute__((aligned(64)));

/* The calibration and the conversion's writer, whichever thread wins busy
 * (a try-lock: a thread finding it taken skips the update, never waits).
 * On a cache line of its own: the try-lock is written at every re-anchor,
 * and no line that the hot path reads should bounce with it. */
static struct {
    int busy;
    bool base_valid;
    uint64_t base_tsc, base_ns;
    uint64_t estimate_span_ns; /* the span the published rate was measured over */
    bool last_valid;           /* last_tsc, last_ns: the previous re-anchor's pair */
    uint64_t last_tsc, last_ns;
    uint64_t failed_tsc; /* no conversion yet: TSC of the last failed attempt to make one; 0: none */
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

/* Feeds one good pair to the calibration; the caller holds cal.busy. */
static void calibrate_locked(const struct clock_pair *p)
{
    bool had_last = cal.last_valid;
    uint64_t last_tsc = cal.last_tsc, last_ns = cal.last_ns;
    cal.last_valid = true;
    cal.last_tsc = p->tsc;
    cal.last_ns = p->ns;
    if (!cal.base_valid || p->tsc <= cal.base_tsc || p->ns <= cal.base_ns) {
        rebase(p); /* no base yet, or the counter went back: start over */
        return;
    }
    /* Drift: the previous re-anchor's pair, a window or so ago, predicts
     * this one worse than the published rate can explain: the rate over
     * that window is published at once (a fast slew, a changed frequency). */
    uint64_t mult = __atomic_load_n(&published_mult, __ATOMIC_RELAXED);
    uint64_t window = __atomic_load_n(&published_window, __ATOMIC_RELAXED);
    if (mult && had_last && p->tsc > last_tsc && p->ns > last_ns && p->tsc - last_tsc <= 4 * window) {
        uint64_t since = p->tsc - last_tsc;
        uint64_t predicted = last_ns + (uint64_t)(((unsigned __int128)since * mult) >> CMT_CLOCK_SHIFT);
        uint64_t off = predicted > p->ns ? predicted - p->ns : p->ns - predicted;
        uint64_t local = rate_of(p->ns - last_ns, since);
        if (off > CMT_CLOCK_DRIFT_NS && local >= CMT_CLOCK_MIN_MULT && local <= CMT_CLOCK_MAX_MULT) {
            publish(local);
            cal.estimate_span_ns = p->ns - last_ns;
            rebase(p);
            return;
        }
    }
    uint64_t span_ns = p->ns - cal.base_ns;
    uint64_t wanted = cal.estimate_span_ns < CMT_CLOCK_MIN_SPAN_NS ? CMT_CLOCK_MIN_SPAN_NS : cal.estimate_span_ns;
    if (wanted > CMT_CLOCK_REBASE_NS)
        wanted = CMT_CLOCK_REBASE_NS;
    if (span_ns >= wanted) {
        uint64_t m = rate_of(span_ns, p->tsc - cal.base_tsc);
        if (m < CMT_CLOCK_MIN_MULT || m > CMT_CLOCK_MAX_MULT) {
            rebase(p); /* not a counter we can use (yet): keep clock_gettime */
            return;
        }
        publish(m);
        cal.estimate_span_ns = span_ns;
        if (span_ns >= CMT_CLOCK_REBASE_NS)
            rebase(p);
    }
}

/* The value of slot s at counter value tsc in 2^-32 ns, whatever the
 * distance (the fast path's product is bounded by its reach; this one is
 * not): within the window at the slot's slewed rate, beyond it on either
 * side at the calibrated rate (the slew made up the error by the window's
 * end, and would add to it past there). Past the window a re-anchor is
 * late: nothing was read for a while, or another thread is at it (the
 * value is then handed out, and the next conversion starts no lower: a
 * thread preempted while it re-anchors must not stop the clock for the
 * others). A counter far below the anchor gives 0 at the least. */
static unsigned __int128 slot_fixed(const struct cmt_clock_slot *s, uint64_t tsc)
{
    __int128 d = (__int128)(int64_t)(tsc - s->tsc);
    if (tsc > s->tsc && tsc - s->tsc > (1ull << 62))
        d = (__int128)(tsc - s->tsc); /* beyond int64's range ahead: kept non-negative */
    __int128 w = (__int128)s->window;
    __int128 v = ((__int128)s->ns << CMT_CLOCK_SHIFT) + s->frac;
    if (d > w)
        v += w * (__int128)s->mult + (d - w) * (__int128)s->rate;
    else if (d < -w)
        v += -w * (__int128)s->mult + (d + w) * (__int128)s->rate;
    else
        v += d * (__int128)s->mult;
    return v < 0 ? 0 : (unsigned __int128)v;
}

static uint64_t slot_value(const struct cmt_clock_slot *s, uint64_t tsc)
{
    return (uint64_t)(slot_fixed(s, tsc) >> CMT_CLOCK_SHIFT);
}

/* Copies the current slot consistently (slow path: retries while its index
 * went stale under a writer; a writer never holds a current slot). */
static struct cmt_clock_slot read_current(void)
{
    for (;;) {
        const struct cmt_clock_slot *s =
            &cmt_clock_conversion.slot[__atomic_load_n(&cmt_clock_conversion.current, __ATOMIC_ACQUIRE) & 1u];
        uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        struct cmt_clock_slot copy;
        copy.seq = seq;
        copy.frac = __atomic_load_n(&s->frac, __ATOMIC_RELAXED);
        copy.tsc = __atomic_load_n(&s->tsc, __ATOMIC_RELAXED);
        copy.ns = __atomic_load_n(&s->ns, __ATOMIC_RELAXED);
        copy.mult = __atomic_load_n(&s->mult, __ATOMIC_RELAXED);
        copy.rate = __atomic_load_n(&s->rate, __ATOMIC_RELAXED);
        copy.fast = __atomic_load_n(&s->fast, __ATOMIC_RELAXED);
        copy.window = __atomic_load_n(&s->window, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (!(seq & 1u) && seq == __atomic_load_n(&s->seq, __ATOMIC_RELAXED))
            return copy;
    }
}

/* Writes the slot not in use and makes it current; the caller holds
 * cal.busy (one writer at a time). */
static void install_locked(uint64_t tsc, unsigned __int128 fixed, uint64_t mult, uint64_t rate, uint64_t window)
{
    uint32_t next = (__atomic_load_n(&cmt_clock_conversion.current, __ATOMIC_RELAXED) & 1u) ^ 1u;
    struct cmt_clock_slot *s = &cmt_clock_conversion.slot[next];
    /* From whatever count a fork left there: odd, then the even one after. */
    uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED) | 1u;
    __atomic_store_n(&s->seq, seq, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&s->tsc, tsc, __ATOMIC_RELAXED);
    __atomic_store_n(&s->ns, (uint64_t)(fixed >> CMT_CLOCK_SHIFT), __ATOMIC_RELAXED);
    __atomic_store_n(&s->frac, (uint32_t)fixed, __ATOMIC_RELAXED);
    __atomic_store_n(&s->mult, mult, __ATOMIC_RELAXED);
    __atomic_store_n(&s->rate, rate, __ATOMIC_RELAXED);
    __atomic_store_n(&s->fast, window - window / CMT_CLOCK_EARLY_DIVISOR, __ATOMIC_RELAXED);
    __atomic_store_n(&s->window, window, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&cmt_clock_conversion.current, next, __ATOMIC_RELEASE);
}

/* Takes a pair and writes the next conversion; the caller holds cal.busy.
 * Returns false when there is none to write (no calibration yet, or no
 * pair narrow enough for a first conversion). */
static bool reanchor_locked(void)
{
    uint64_t limit = __atomic_load_n(&bracket_limit, __ATOMIC_RELAXED);
    struct clock_pair p = read_good_pair(CMT_CLOCK_PAIR_TRIES, limit);
    bool good = p.bracket <= limit;
    if (good)
        calibrate_locked(&p);
    uint64_t mult = __atomic_load_n(&published_mult, __ATOMIC_RELAXED);
    uint64_t window = __atomic_load_n(&published_window, __ATOMIC_RELAXED);
    if (!mult)
        return false;
    struct cmt_clock_slot old = read_current();
    /* The new anchor is now (after the pair): readers still on the old slot
     * read counters up to about here, and the old slot's value here is
     * where the new one starts. */
    uint64_t at = rdtsc_ordered();
    if (!old.window) {
        if (!good)
            return false;
        uint64_t ns = p.ns + (test_skew_ns ? test_skew_ns : 0); /* tests: the first anchor ahead */
        install_locked(at, ((unsigned __int128)ns << CMT_CLOCK_SHIFT) + (unsigned __int128)(at - p.tsc) * mult, mult,
                       mult, window);
        return true;
    }
    /* Where the old conversion is at the new anchor: readers still on it
     * read counters up to about here. */
    unsigned __int128 from = slot_fixed(&old, at);
    if (from < (unsigned __int128)old.ns << CMT_CLOCK_SHIFT)
        from = (unsigned __int128)old.ns << CMT_CLOCK_SHIFT; /* the counter went back: never below the old anchor */
    uint64_t next_mult = mult;
    if (good) {
        /* What clock_gettime says now (from the pair at the calibrated
         * rate) against what the old conversion says: the difference is
         * made up over the next window, by its rate. */
        __int128 truth = ((__int128)p.ns << CMT_CLOCK_SHIFT) + (__int128)(int64_t)(at - p.tsc) * (__int128)mult;
        if (__builtin_expect(test_skew_ns != 0, 0))
            truth += (__int128)(((p.tsc >> 8) & 1) ? (int64_t)test_skew_ns : -(int64_t)test_skew_ns) *
                     ((__int128)1 << CMT_CLOCK_SHIFT); /* a product: a negative value shifted is undefined */
        __int128 err = truth - (__int128)from;
        __int128 most = (__int128)(CMT_CLOCK_WINDOW_NS >> CMT_CLOCK_SLEW_SHIFT) << CMT_CLOCK_SHIFT;
        if (err > most) {
            from = (unsigned __int128)truth; /* far behind: a step forward */
        } else {
            if (err < -most)
                err = -most;
            __int128 span = ((__int128)CMT_CLOCK_WINDOW_NS << CMT_CLOCK_SHIFT) + err;
            next_mult = (uint64_t)(span / window);
        }
    }
    install_locked(at, from, next_mult, mult, window);
    return true;
}

uint64_t cmt_clock_slow(uint64_t tsc, uint64_t floor)
{
    struct cmt_clock_slot s = read_current();
    if (!s.window) {
        /* No conversion: clock_gettime. Where no pair is ever narrow enough
         * (under valgrind; a clock_gettime slower than the bracket allows),
         * trying at every read cost up to CMT_CLOCK_PAIR_TRIES clock_gettime
         * calls per event: after a failure the reads of the back-off period
         * make no attempt. Unsigned difference: a counter that went back
         * ends the back-off. */
        uint64_t failed = __atomic_load_n(&cal.failed_tsc, __ATOMIC_RELAXED);
        uint64_t window = __atomic_load_n(&published_window, __ATOMIC_RELAXED);
        if (failed && tsc - failed < (window ? window : CMT_CLOCK_BACKOFF_CYCLES))
            return cmt_now_ns_at_least(floor);
        if (__atomic_exchange_n(&cal.busy, 1, __ATOMIC_ACQUIRE))
            return cmt_now_ns_at_least(floor);
        bool made = reanchor_locked();
        __atomic_store_n(&cal.failed_tsc, made ? 0 : (tsc ? tsc : 1), __ATOMIC_RELAXED);
        __atomic_store_n(&cal.busy, 0, __ATOMIC_RELEASE);
        if (!made)
            return cmt_now_ns_at_least(floor);
        s = read_current();
    } else {
        uint64_t d = tsc - s.tsc;
        if (d + s.window >= s.window + s.fast && !__atomic_exchange_n(&cal.busy, 1, __ATOMIC_ACQUIRE)) {
            /* Past the fast path's reach, the last eighth of the window (or
             * far below the anchor): this thread re-anchors; one that finds
             * the try-lock taken reads the conversion it has. */
            reanchor_locked();
            __atomic_store_n(&cal.busy, 0, __ATOMIC_RELEASE);
            s = read_current();
        }
    }
    uint64_t v = slot_value(&s, tsc);
    return v > floor ? v : floor;
}

bool cmt_clock_reanchor_now(void)
{
    if (!cmt_clock_tsc_on || __atomic_exchange_n(&cal.busy, 1, __ATOMIC_ACQUIRE))
        return false;
    bool made = reanchor_locked();
    __atomic_store_n(&cal.busy, 0, __ATOMIC_RELEASE);
    return made;
}

void cmt_clock_ready(void)
{
    if (!cmt_clock_tsc_on)
        return;
    if (!__atomic_load_n(&published_mult, __ATOMIC_RELAXED)) {
        /* To a deadline, not for a duration: a program whose timer signals
         * come faster than the sleep's slack (50 us) would never see a
         * relative sleep end (tests/e2e/programs/signal_reentry.c did not). */
        uint64_t deadline = cal.base_ns + CMT_CLOCK_MIN_SPAN_NS;
        struct timespec until = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
        while (cmt_now_ns() < deadline)
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
    }
    /* The rate, then the first conversion: before the first event, so that
     * no event of any thread takes clock_gettime's value and the next one
     * the conversion's (their errors differ). */
    for (unsigned i = 0; i < CMT_CLOCK_PAIR_TRIES && !cmt_clock_current().window; i++) {
        if (__atomic_exchange_n(&cal.busy, 1, __ATOMIC_ACQUIRE))
            return; /* another thread is at it */
        if (!__atomic_load_n(&published_mult, __ATOMIC_RELAXED)) {
            uint64_t limit = __atomic_load_n(&bracket_limit, __ATOMIC_RELAXED);
            struct clock_pair p = read_good_pair(CMT_CLOCK_PAIR_TRIES, limit);
            if (p.bracket <= limit)
                calibrate_locked(&p);
        }
        if (__atomic_load_n(&published_mult, __ATOMIC_RELAXED))
            reanchor_locked();
        __atomic_store_n(&cal.busy, 0, __ATOMIC_RELEASE);
    }
}

struct cmt_clock_slot cmt_clock_current(void)
{
    return read_current();
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

uint64_t cmt_clock_slow(uint64_t tsc, uint64_t floor)
{
    (void)tsc;
    return cmt_now_ns_at_least(floor);
}

bool cmt_clock_reanchor_now(void)
{
    return false;
}

struct cmt_clock_slot cmt_clock_current(void)
{
    return (struct cmt_clock_slot){0};
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
        cmt_log_warning("ignoring CUMEMTRACE_CLOCK=tsc: %s; timestamps come from clock_gettime (set "
                        "CUMEMTRACE_CLOCK=auto to choose without this warning)", refusal);

    __atomic_store_n(&cmt_clock_tsc_on, false, __ATOMIC_RELAXED);
    __atomic_store_n(&published_mult, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&published_window, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&bracket_limit, 0, __ATOMIC_RELAXED);
    cal.estimate_span_ns = 0;
    cal.base_valid = false;
    cal.last_valid = false;
    __atomic_store_n(&cal.failed_tsc, 0, __ATOMIC_RELAXED);
    /* No conversion: both slots without a window (tests switch modes). */
    for (unsigned i = 0; i < 2; i++) {
        __atomic_store_n(&cmt_clock_conversion.slot[i].fast, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&cmt_clock_conversion.slot[i].window, 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&cal.busy, 0, __ATOMIC_RELEASE);
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
    __atomic_store_n(&cal.busy, 0, __ATOMIC_RELEASE);
}
