/* SPDX-License-Identifier: MIT */
/* cpu_pair [ROUNDS]: is a second thread of the analyzer worth it on this
 * machine? (docs/performance.md, "Two threads")
 *
 * Three tests, each thread pinned to its own CPU (the first two CPUs this
 * process may use), each run alone and then with both threads at once:
 *   alu    integer work with plenty of instruction-level parallelism: two
 *          SMT siblings (hyperthreads of one core, or vCPUs a hypervisor
 *          placed on them) share the core's ALUs, so each thread slows by
 *          a third or more when both run;
 *   cache  random reads over 1.5 MiB, about what the replay's tables take:
 *          siblings share the core's L2, so together they miss more;
 *   pair   the analyzer's hand-over: one thread writes 48-byte entries into
 *          batches of 2,048 in a ring of 8 (the feed's layout), the other
 *          reads them back; both on one CPU (taking turns), then on two;
 *          pairN the same with non-temporal stores (x86-64).
 * For each: CPU seconds per thread (CLOCK_THREAD_CPUTIME_ID, so other
 * processes taking turns on the CPU do not count; for pair, only while it
 * works on a batch, not while it waits for one), alone and together.
 * Ratios near 1 say the CPUs are separate cores; near 1.3 or more for alu
 * say SMT siblings. Best of ROUNDS (default 3) each. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <emmintrin.h>
#define PAIR_STREAMING 1
#endif
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cpus[2];

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

/* ---- alu and cache -------------------------------------------------------- */

struct work {
    int cpu;
    int kind; /* 0 alu, 1 cache */
    double cpu_s;
    uint64_t sink;
};

static void *work_thread(void *arg)
{
    struct work *w = arg;
    pin(w->cpu);
    uint64_t x = 88172645463325252ull, acc = 0;
    double t0 = cpu_now();
    if (w->kind == 0) {
        uint64_t y = x * 3, z = x * 5, u = x * 7;
        for (long i = 0; i < 200000000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            y ^= y << 13, y ^= y >> 7, y ^= y << 17;
            z ^= z << 13, z ^= z >> 7, z ^= z << 17;
            u ^= u << 13, u ^= u >> 7, u ^= u << 17;
            acc += (x & 1) ? y : z;
        }
        acc += u;
    } else {
        size_t n = (3u << 20) / 2 / sizeof(uint64_t);
        uint64_t *b = malloc(n * sizeof *b);
        if (!b)
            exit(1);
        for (size_t i = 0; i < n; i++)
            b[i] = i * 2654435761u;
        t0 = cpu_now();
        for (long i = 0; i < 40000000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            acc += b[(x + acc) % n];
        }
        free(b);
    }
    w->cpu_s = cpu_now() - t0;
    w->sink = acc;
    return NULL;
}

static void run_work(int kind, double alone[2], double together[2])
{
    struct work w[2] = {{cpus[0], kind, 0, 0}, {cpus[1], kind, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        pthread_create(&t[i], NULL, work_thread, &w[i]);
        pthread_join(t[i], NULL);
        alone[i] = w[i].cpu_s;
    }
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work_thread, &w[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        together[i] = w[i].cpu_s;
    }
}

/* ---- pair: the feed's hand-over ------------------------------------------- */

#define ENTRY_BYTES 48
#define BATCH 2048
#define RING 8
#define PAIR_ENTRIES 20000000L

struct entry {
    uint64_t w[ENTRY_BYTES / 8];
};

struct ring {
    struct entry batches[RING][BATCH];
    _Alignas(64) atomic_long produced; /* batches */
    _Alignas(64) atomic_long consumed;
    int cpu[2];
    bool streaming; /* the producer writes with non-temporal stores */
    double cpu_s[2];
    uint64_t sink;
};

static void *producer(void *arg)
{
    struct ring *r = arg;
    pin(r->cpu[0]);
    double busy = 0;
    uint64_t x = 1;
    for (long b = 0; b < PAIR_ENTRIES / BATCH; b++) {
        while (b - atomic_load_explicit(&r->consumed, memory_order_acquire) >= RING)
            sched_yield();
        double t0 = cpu_now();
        struct entry *e = r->batches[b % RING];
#ifdef PAIR_STREAMING
        if (r->streaming) {
            for (int i = 0; i < BATCH; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                for (int k = 0; k < ENTRY_BYTES / 8; k += 2)
                    _mm_stream_si128((__m128i *)&e[i].w[k], _mm_set_epi64x((long long)(x + (uint64_t)k + 1),
                                                                           (long long)(x + (uint64_t)k)));
            }
            _mm_sfence();
        } else
#endif
        {
            for (int i = 0; i < BATCH; i++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                for (int k = 0; k < ENTRY_BYTES / 8; k++)
                    e[i].w[k] = x + (uint64_t)k;
            }
        }
        busy += cpu_now() - t0;
        atomic_store_explicit(&r->produced, b + 1, memory_order_release);
    }
    r->cpu_s[0] = busy;
    return NULL;
}

static void *consumer(void *arg)
{
    struct ring *r = arg;
    pin(r->cpu[1]);
    double busy = 0;
    uint64_t acc = 0;
    for (long b = 0; b < PAIR_ENTRIES / BATCH; b++) {
        while (atomic_load_explicit(&r->produced, memory_order_acquire) <= b)
            sched_yield();
        double t0 = cpu_now();
        const struct entry *e = r->batches[b % RING];
        for (int i = 0; i < BATCH; i++)
            for (int k = 0; k < ENTRY_BYTES / 8; k++)
                acc ^= e[i].w[k] * (uint64_t)(k + 1);
        busy += cpu_now() - t0;
        atomic_store_explicit(&r->consumed, b + 1, memory_order_release);
    }
    r->cpu_s[1] = busy;
    r->sink = acc;
    return NULL;
}

static void run_pair(int cpu_a, int cpu_b, bool streaming, double out[2])
{
    struct ring *r = aligned_alloc(64, sizeof *r);
    if (!r)
        exit(1);
    memset(r, 0, sizeof *r);
    r->cpu[0] = cpu_a;
    r->cpu[1] = cpu_b;
    r->streaming = streaming;
    pthread_t t[2];
    pthread_create(&t[0], NULL, producer, r);
    pthread_create(&t[1], NULL, consumer, r);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    out[0] = r->cpu_s[0];
    out[1] = r->cpu_s[1];
    free(r);
}

static void keep_min(double best[2], const double v[2])
{
    for (int i = 0; i < 2; i++)
        if (best[i] == 0 || v[i] < best[i])
            best[i] = v[i];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0)
        return 1;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &s))
            cpus[n++] = c;
    if (n < 2) {
        printf("cpu_pair: one CPU usable: nothing to compare\n");
        return 0;
    }
    const char *names[2] = {"alu", "cache"};
    printf("CPUs %d and %d, best of %d (CPU seconds per thread)\n", cpus[0], cpus[1], rounds);
    for (int kind = 0; kind < 2; kind++) {
        double alone[2] = {0, 0}, together[2] = {0, 0};
        for (int i = 0; i < rounds; i++) {
            double a[2], t[2];
            run_work(kind, a, t);
            keep_min(alone, a);
            keep_min(together, t);
        }
        printf("%-5s alone %.3f %.3f   together %.3f %.3f   ratio %.2f %.2f\n", names[kind], alone[0], alone[1],
               together[0], together[1], together[0] / alone[0], together[1] / alone[1]);
    }
#ifdef PAIR_STREAMING
    int kinds = 2; /* ordinary and non-temporal stores */
#else
    int kinds = 1;
#endif
    for (int streaming = 0; streaming < kinds; streaming++) {
        double one[2] = {0, 0}, two[2] = {0, 0};
        for (int i = 0; i < rounds; i++) {
            double a[2], t[2];
            run_pair(cpus[0], cpus[0], streaming, a);
            run_pair(cpus[0], cpus[1], streaming, t);
            keep_min(one, a);
            keep_min(two, t);
        }
        printf("%-5s one CPU %.3f %.3f   two CPUs %.3f %.3f   ratio %.2f %.2f (ns per entry on two: %.1f %.1f)\n",
               streaming ? "pairN" : "pair", one[0], one[1], two[0], two[1], two[0] / one[0], two[1] / one[1],
               two[0] * 1e9 / PAIR_ENTRIES, two[1] * 1e9 / PAIR_ENTRIES);
    }
    return 0;
}
