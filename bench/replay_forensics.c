/* SPDX-License-Identifier: MIT */
/* What the forensics cost the analyzer: one synthetic trace replayed three
 * ways (forensics off, on as `report` runs them, on with per-release hole
 * tracking as `frag` runs them). Prints ns per event for each.
 *
 *   bench/replay_forensics [EVENTS [LIVE [MODE]]]   defaults: 2000000 events, 10000 live, every mode
 *
 * The workloads: one device, allocations from 256 call sites (each of one
 * size, then each of 64 sizes) into
 * 1 MiB slots reused last-freed-first (holes open and close all the time):
 * allocations until LIVE are live, then a release of a random one and a new
 * allocation in turn; a device sample every 10000 events. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"
#include "clock.h"
#include "event_stream.h"
#include "meta_stream.h"
#include "trace_file.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct slot_alloc {
    uint64_t addr, size;
};

static int write_trace(const char *path, uint64_t events, uint64_t live_target, uint64_t sizes_per_site)
{
    struct cmt_trace_file tf;
    struct cmt_trace_create_options opt = {.pid = 1};
    if (cmt_trace_create(&tf, path, &opt) != 0)
        return -1;
    struct cmt_event_stream s = {.tid = 1};
    struct slot_alloc *live = calloc(live_target + 1, sizeof *live);
    uint64_t *free_slots = calloc(live_target + 2, sizeof *free_slots);
    if (!live || !free_slots)
        return -1;
    uint64_t n_live = 0, n_free = 0, next_slot = 0, ts = cmt_now_ns();
    const uint64_t base = 0x500000000000ull;
    for (uint64_t i = 0; i < events; i++) {
        if (!cmt_event_stream_reserve(&tf, &s))
            return -1;
        struct cmt_event e = {.has_device = true, .device = 0, .ts = ++ts};
        if (i % 10000 == 9999) {
            e.type = CMT_REC_SAMPLE;
            e.api = CMT_API_SAMPLE_PERIODIC;
            e.aux[0] = 40ull << 30;
            e.aux[1] = 80ull << 30;
        } else if (n_live < live_target) {
            uint64_t slot = n_free ? free_slots[--n_free] : next_slot++;
            uint64_t stack = 1 + next_random() % 256;
            uint64_t size = ((stack * 7 + next_random() % sizes_per_site) % 64 + 1) * 16384;
            live[n_live++] = (struct slot_alloc){base + slot * (1ull << 20), size};
            e.type = CMT_REC_ALLOC;
            e.api = CMT_API_CUDA_MALLOC;
            e.kind = CMT_KIND_DEVICE;
            e.addr = live[n_live - 1].addr;
            e.size = size;
            e.stack = stack;
        } else {
            uint64_t k = next_random() % n_live;
            e.type = CMT_REC_FREE;
            e.api = CMT_API_CUDA_FREE;
            e.kind = CMT_KIND_DEVICE;
            e.has_device = false;
            e.addr = live[k].addr;
            free_slots[n_free++] = (live[k].addr - base) >> 20;
            live[k] = live[--n_live];
        }
        cmt_event_stream_append(&s, &e);
    }
    cmt_trace_finish(&tf, cmt_now_ns());
    free(live);
    free(free_slots);
    return 0;
}

static double replay(const char *path, const struct cmt_analysis_options *opt, uint64_t *events,
                     uint64_t *checkpoints)
{
    struct cmt_analysis a;
    uint64_t t0 = cmt_now_ns();
    if (cmt_analysis_run_with(&a, path, 0, opt) != 0) {
        fprintf(stderr, "replay_forensics: %s\n", a.message);
        exit(1);
    }
    uint64_t t1 = cmt_now_ns();
    *events = a.replay.events;
    *checkpoints = a.forensics ? a.forensics->checkpoints : 0;
    cmt_analysis_free(&a);
    return (double)(t1 - t0);
}

static int only_mode = -1; /* argv[3]: run one mode alone (for a profiler) */

static void run_modes(const char *path, uint64_t events, uint64_t live, uint64_t sizes_per_site)
{
    struct {
        const char *what;
        struct cmt_analysis_options opt;
    } modes[] = {
        {"forensics off", {.forensics = false}},
        {"report (checkpoints by sorting)", {.forensics = true}},
        {"frag (ordered index, releases tracked)", {.forensics = true, .forensics_opt = {.track_holes = true}}},
    };
    printf("replay of %" PRIu64 " events, up to %" PRIu64 " live allocations, %" PRIu64
           " sizes per call site, best of 5:\n",
           events, live, sizes_per_site);
    double base = 0;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        if (only_mode >= 0 && (size_t)only_mode != m)
            continue;
        double best = 0;
        uint64_t n = 0, checkpoints = 0;
        for (int rep = 0; rep < 5; rep++) {
            double t = replay(path, &modes[m].opt, &n, &checkpoints);
            if (rep == 0 || t < best)
                best = t;
        }
        if (m == 0)
            base = best;
        printf("  %-40s %7.1f ns/event  %6.2f M events/s  %+6.1f%%  (%" PRIu64 " checkpoints)\n", modes[m].what,
               best / (double)n, (double)n / best * 1e3, (best - base) / base * 100.0, checkpoints);
    }
}

int main(int argc, char **argv)
{
    uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    uint64_t live = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000;
    only_mode = argc > 3 ? atoi(argv[3]) : -1;
    /* Each call site repeating one size (most programs), then each cycling
     * through 64 (the worst case for the churn tally). */
    uint64_t sizes_per_site[] = {1, 64};
    for (size_t w = 0; w < 2; w++) {
        char path[] = "/tmp/cmt-bench-replay-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
            return 1;
        close(fd);
        unlink(path);
        if (write_trace(path, events, live, sizes_per_site[w]) != 0) {
            fprintf(stderr, "replay_forensics: cannot write %s\n", path);
            return 1;
        }
        run_modes(path, events, live, sizes_per_site[w]);
        unlink(path);
    }
    return 0;
}
